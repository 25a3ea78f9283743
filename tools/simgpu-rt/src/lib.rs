//! Runtime for sample GPU programs (filled by the gpu-target issue).
