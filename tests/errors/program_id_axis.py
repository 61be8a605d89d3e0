# RUN: --kernel k --signature "*f32"
import tessera
import tessera.language as tl

@tessera.jit
def k(dst):
    pid = tl.program_id(20)
    tl.store(dst + pid, 1.0)
