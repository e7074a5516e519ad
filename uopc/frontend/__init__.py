"""The PyTorch-like frontend: the lazy `Tensor`, autodiff, `nn` layers and optimizers."""
