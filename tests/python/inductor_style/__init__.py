"""Kernels written in the style torch's Inductor generates (generated.py) and a stand-in for torch's
torch/_inductor/runtime/triton_helpers.py (triton_helpers.py): tests/python/test_torch_compile_contract.py
and tests/fake_driver/test_torch_compile_launch.py compile them through the compatibility mode's
triton.compile(ASTSource(...)), as Inductor does. Importing them needs the process-wide mode on
(`import triton` is tessera's)."""
