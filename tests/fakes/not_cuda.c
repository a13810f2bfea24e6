/* A library with the driver's SONAME but no cuDriverGetVersion: not a CUDA driver. */
int cuInit(unsigned int flags) { return (int)flags; }
