// Package pylayer runs Caffe's Python layers (type "Python", python_param
// { module layer param_str }) in dsgd, as a pycaffe-enabled Caffe does:
// the user's class, a subclass of caffe.Layer, is imported from its
// module and called for setup, reshape, forward and backward.
//
// CPython is opened at run time (dlopen of libpython3.X.so.1.0, or the
// file DSGD_LIBPYTHON names; its entry points looked up with dlsym, as
// engine/tensor opens OpenBLAS), so building dsgd needs no Python headers
// and a binary starts where Python is missing, refusing only the nets
// that have Python layers. The interpreter is started once per process,
// without its signal handlers (Py_InitializeEx(0)), with the current
// folder and PYTHONPATH on sys.path. Every call from Go takes the GIL
// (PyGILState_Ensure) on a locked OS thread, so layers may be called from
// several goroutines (several workers' nets); the calls then run one at a
// time.
//
// Python sees a `caffe` module written for dsgd (caffe.py, embedded):
// caffe.Layer with param_str, phase and blobs (a list with add_blob),
// caffe.TRAIN and caffe.TEST, and blobs whose data and diff are float32
// numpy arrays. Those arrays are Python's own: before each call dsgd
// copies its blobs into them and after it copies them back, so a layer
// that keeps an array never holds dsgd's memory. pycaffe's other parts
// (caffe.io, caffe.Net, the solvers, net_spec) are refused by name.
//
// The calls come in Caffe's order: setup then reshape when the layer is
// set up, reshape then forward on each forward pass (a data layer may
// change its tops' shapes there; the net then reshapes the layers after
// it), backward with propagate_down where the net needs the layer's
// gradients. py-faster-rcnn's spelling self.param_str_ is set too. A layer
// the program drops releases its Python object.
//
// A layer's parameter blobs (self.blobs.add_blob in setup) become the
// layer's params in dsgd: learned by the solver, saved in snapshots and
// .caffemodel files as the layer's blobs. They are fixed when setup
// returns: adding or reshaping one later is an error.
//
// Under the purego build tag the package builds but refuses every Python
// layer, saying why.
package pylayer
