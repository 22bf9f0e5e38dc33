"""What every environment that grades installs, the one place each setup path takes it from.

torch first, pinned, from PyTorch's CPU wheel index: from the default index
``torch==2.13.0`` resolves to its CUDA build and pulls 16 ``nvidia-*``/``cuda-*``
packages and triton, gigabytes no check uses. A pip configured with local
wheels (``find-links``) still finds the same version there: ``--extra-index-url``
adds an index, it replaces none.
"""

TORCH = "torch==2.13.0"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
