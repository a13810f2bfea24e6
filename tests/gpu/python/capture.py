"""What tests/gpu/python/python_gpu.py and python_two.py capture: all_reduces in a CUDA graph."""


def captured_all_reduce(torch, comm, x, y, calls=1, explicit_stream=False):
    """A torch.cuda.CUDAGraph of `calls` comm.all_reduce(x, y) on torch's current stream (the
    capture stream): named as stream= when explicit_stream (a pynccl-style wrapper needs it),
    else left to comm's default. A warm-up call runs first, outside the capture, on a side
    stream."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        comm.all_reduce(x, y, stream=s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            if explicit_stream:
                comm.all_reduce(x, y, stream=torch.cuda.current_stream())
            else:
                comm.all_reduce(x, y)
    return g
