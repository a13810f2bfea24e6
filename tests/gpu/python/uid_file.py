"""A unique id handed from rank 0 to the others by a file (tests/gpu/dropin/hang2_job.py,
python_two.py): rank 0 writes it whole (renamed into place), the others wait for it."""
import os
import time


def publish(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)


def wait_for(path, rank, limit_s=60):
    until = time.monotonic() + limit_s
    while not os.path.exists(path):
        if time.monotonic() > until:
            raise SystemExit("rank %d: no unique id in %s after %g s" % (rank, path, limit_s))
        time.sleep(0.01)
    with open(path, "rb") as f:
        return f.read()
