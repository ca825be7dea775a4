#!/usr/bin/env bash
# Installs what dsgd needs on a Debian machine: OpenBLAS (GEMM), oneDNN
# (convolution, pooling, LRN), LMDB, LevelDB and HDF5 (Caffe's data
# formats), libjpeg (JPEG decoding as Caffe's OpenCV does it) and the Fashion-MNIST data set; with the argument "test", also what the tests
# start: Open MPI's mpirun, redis-server and iproute2. Does nothing when all are
# present; says exactly what to install when it cannot install them itself.
set -u
need=()
if [ "${1:-}" = test ]; then
  command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  # ip and tc: the two-host test's network namespaces and rate limit.
  { command -v ip && command -v tc; } >/dev/null 2>&1 || need+=(iproute2)
  # Python layers' tests (engine/pylayer, opened at run time; the tests
  # skip without them): CPython's shared library and numpy for it.
  pyv=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.11)
  ls /usr/lib/x86_64-linux-gnu/libpython3.*.so.1.0 >/dev/null 2>&1 || need+=("libpython$pyv")
  [ -d /usr/lib/python3/dist-packages/numpy ] || need+=(python3-numpy)
fi
# OpenBLAS and oneDNN are opened at run time (dsgd runs without them, on
# slower pure-Go kernels, and says so); oneDNN's header is needed to build.
[ -e /usr/lib/x86_64-linux-gnu/libopenblas.so.0 ] || [ -e /usr/lib/libopenblas.so.0 ] || need+=(libopenblas0)
[ -e /usr/include/oneapi/dnnl/dnnl.h ] || need+=(libdnnl-dev)
[ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] || need+=(dataset-fashion-mnist)
# Caffe's data formats, through their C libraries (cgo): LMDB, LevelDB,
# HDF5 (found with pkg-config).
[ -e /usr/include/lmdb.h ] || need+=(liblmdb-dev)
[ -e /usr/include/leveldb/c.h ] || need+=(libleveldb-dev)
[ -e /usr/include/hdf5/serial/hdf5.h ] || [ -e /usr/include/hdf5.h ] || need+=(libhdf5-dev)
# JPEG decoding through libjpeg(-turbo), as Caffe's OpenCV decodes: the
# same pixels (Go's decoder differs by a few levels).
[ -e /usr/include/jpeglib.h ] || [ -e /usr/include/x86_64-linux-gnu/jpeglib.h ] || need+=(libjpeg-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
if [ "${#need[@]}" -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${need[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup: missing ${need[*]}; as root run: apt-get update && apt-get install -y ${need[*]}" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${need[*]} and no apt-get here; install OpenBLAS, oneDNN 2.x, liblmdb, libleveldb, libhdf5 and libjpeg with their headers, and the Fashion-MNIST IDX files (pass --data DIR), or build with -tags purego" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq "${need[@]}" >/dev/null; }; then
  echo "setup: apt-get failed; install them by hand: apt-get update && apt-get install -y ${need[*]}" >&2
  exit 1
fi
