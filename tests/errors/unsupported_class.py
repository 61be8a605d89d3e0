# RUN: --kernel k --signature "*fp32"
import tessera
import tessera.language as tl

class Config:
    pass
