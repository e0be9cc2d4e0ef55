// torchvision's ResNet-18 (torchvision/models/resnet.py: BasicBlock, `_make_layer`, the 7×7 stem
// and 3×3 max pool, `nn.ReLU(inplace=True)`, `out += identity`, kaiming init) in webtorch, as a
// PyTorch user ports it. `width` is torchvision's 64; test/habits/resnet18.test.ts checks it against
// PyTorch at width 4, and bench/models.mjs times it at 64.
export function makeResNet18(torch, numClasses = 1000, width = 64) {
  const { nn } = torch;
  // def conv3x3(in_planes, out_planes, stride=1): return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)
  function conv3x3(inPlanes, outPlanes, stride = 1) {
    return new nn.Conv2d(inPlanes, outPlanes, 3, { stride, padding: 1, bias: false });
  }

  class BasicBlock extends nn.Module {
    static expansion = 1;
    constructor(inplanes, planes, stride = 1, downsample = null) {
      super();
      this.conv1 = conv3x3(inplanes, planes, stride);
      this.bn1 = new nn.BatchNorm2d(planes);
      this.relu = new nn.ReLU({ inplace: true });
      this.conv2 = conv3x3(planes, planes);
      this.bn2 = new nn.BatchNorm2d(planes);
      this.downsample = downsample;
    }

    forward(x) {
      let identity = x;
      let out = this.conv1(x);
      out = this.bn1(out);
      out = this.relu(out);
      out = this.conv2(out);
      out = this.bn2(out);
      if (this.downsample !== null) identity = this.downsample(x);
      out.add_(identity); // out += identity
      out = this.relu(out);
      return out;
    }
  }

  class ResNet extends nn.Module {
    // `width` is torchvision's 64 (the fixture's 4 keeps its state dict small)
    constructor(layers, numClasses = 1000, width = 64) {
      super();
      this.inplanes = width;
      this.conv1 = new nn.Conv2d(3, this.inplanes, 7, { stride: 2, padding: 3, bias: false });
      this.bn1 = new nn.BatchNorm2d(this.inplanes);
      this.relu = new nn.ReLU({ inplace: true });
      this.maxpool = new nn.MaxPool2d(3, { stride: 2, padding: 1 });
      this.layer1 = this.makeLayer(width, layers[0]);
      this.layer2 = this.makeLayer(width * 2, layers[1], 2);
      this.layer3 = this.makeLayer(width * 4, layers[2], 2);
      this.layer4 = this.makeLayer(width * 8, layers[3], 2);
      this.avgpool = new nn.AdaptiveAvgPool2d([1, 1]);
      this.fc = new nn.Linear(width * 8 * BasicBlock.expansion, numClasses);
      for (const m of this.modules()) {
        if (m instanceof nn.Conv2d) {
          nn.init.kaimingNormal_(m.weight, { mode: 'fan_out', nonlinearity: 'relu' });
        } else if (m instanceof nn.BatchNorm2d) {
          nn.init.constant_(m.weight, 1);
          nn.init.constant_(m.bias, 0);
        }
      }
    }

    makeLayer(planes, blocks, stride = 1) {
      let downsample = null;
      if (stride !== 1 || this.inplanes !== planes * BasicBlock.expansion) {
        downsample = new nn.Sequential(
          new nn.Conv2d(this.inplanes, planes * BasicBlock.expansion, 1, { stride, bias: false }),
          new nn.BatchNorm2d(planes * BasicBlock.expansion),
        );
      }
      const layers = [new BasicBlock(this.inplanes, planes, stride, downsample)];
      this.inplanes = planes * BasicBlock.expansion;
      for (let i = 1; i < blocks; i++) layers.push(new BasicBlock(this.inplanes, planes));
      return new nn.Sequential(...layers);
    }

    forward(x) {
      x = this.conv1(x);
      x = this.bn1(x);
      x = this.relu(x);
      x = this.maxpool(x);
      x = this.layer1(x);
      x = this.layer2(x);
      x = this.layer3(x);
      x = this.layer4(x);
      x = this.avgpool(x);
      x = torch.flatten(x, 1);
      x = this.fc(x);
      return x;
    }
  }

    // def resnet18(**kwargs): return ResNet(BasicBlock, [2, 2, 2, 2], **kwargs)
  return new ResNet([2, 2, 2, 2], numClasses, width);
}
