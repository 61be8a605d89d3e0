"""Run-time queries, with Triton's spellings so that tutorial code runs with
only its import changed (`import tessera as triton`):

    triton.runtime.driver.active.get_active_torch_device()       # torch.device("cuda", i)
    triton.runtime.driver.active.get_current_device()            # int
    triton.runtime.driver.active.get_current_stream(device)      # int CUstream (torch's)
    triton.runtime.driver.active.get_current_target()            # .backend "cuda", .arch 90, .warp_size 32
    triton.runtime.driver.active.utils.get_device_properties(i)  # multiprocessor_count, max_num_regs,
                                                                 # max_shared_mem, warpSize, ...
"""
from . import driver

__all__ = ["driver"]
