"""triton.tools: of Triton's tools, only tensor_descriptor has a counterpart (tessera.TensorDescriptor)."""
