"""FX graphs of ATen ops -> FusionDefinitions, shared by smelt's frontends.

The torch.compile backend (smelt.backend) partitions a graph and translates
each partition; TorchScript (smelt.torchscript) converts a fusion group to an
FX graph and translates it the same way. This package knows nothing of
either: it takes an FX graph whose nodes carry their traced values
(node.meta["val"]) and returns a definition and how to call it.
"""
