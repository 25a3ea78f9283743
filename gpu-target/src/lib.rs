//! GPU model (filled by the gpu-target issue).
