"""PyTorch's side of the real-model benchmark (bench/models_torch.py) and of the ResNet-18 goldens
(test/fixtures/make_resnet18.py): torchvision's ResNet-18 (torchvision is not a dependency, so it is
written here after torchvision.models.resnet, with a `width` for the goldens' small copy) and
nanoGPT's GPT (model.py, with PyTorch's scaled_dot_product_attention where it exists).
The module names are the originals', so webtorch's state dicts load here and PyTorch's load there.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(cout, cout)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=10, width=64):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(num_classes=1000, width=64):
    return ResNet([2, 2, 2, 2], num_classes=num_classes, width=width)


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with an optional bias (nn.LayerNorm's bias= needs PyTorch 2.1)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.c_attn = nn.Linear(c['n_embd'], 3 * c['n_embd'], bias=c['bias'])
        self.c_proj = nn.Linear(c['n_embd'], c['n_embd'], bias=c['bias'])
        self.attn_dropout = nn.Dropout(c['dropout'])
        self.resid_dropout = nn.Dropout(c['dropout'])

    def forward(self, x):
        B, T, C = x.size()
        h = self.c['n_head']
        q, k, v = (t.view(B, T, h, C // h).transpose(1, 2) for t in self.c_attn(x).split(C, dim=2))
        if hasattr(F, 'scaled_dot_product_attention'):
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.c['dropout'] if self.training else 0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).tril().logical_not(), float('-inf'))
            y = self.attn_dropout(F.softmax(att, dim=-1)) @ v
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c['n_embd'], 4 * c['n_embd'], bias=c['bias'])
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c['n_embd'], c['n_embd'], bias=c['bias'])
        self.dropout = nn.Dropout(c['dropout'])

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c['n_embd'], c['bias'])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c['n_embd'], c['bias'])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT without weight tying (webtorch's port leaves lm_head and wte apart too)."""

    def __init__(self, c):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c['vocab_size'], c['n_embd']),
            wpe=nn.Embedding(c['block_size'], c['n_embd']),
            drop=nn.Dropout(c['dropout']),
            h=nn.ModuleList([Block(c) for _ in range(c['n_layer'])]),
            ln_f=LayerNorm(c['n_embd'], c['bias']),
        ))
        self.lm_head = nn.Linear(c['n_embd'], c['vocab_size'], bias=False)

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
