# The `caffe` module dsgd gives a Python layer: what pycaffe's _caffe.cpp
# binds for layers (Layer, its blobs, param_str and phase; Blob; TRAIN and
# TEST), written anew. dsgd registers it in sys.modules before it imports
# a layer's module. _dsgd_dispatch is dsgd's one entry point: Go calls it
# with a JSON request and reads back a JSON answer; blob memory moves by
# copies between dsgd's blobs (pinned for the call) and numpy arrays this
# module owns, so no array a layer keeps ever points into dsgd's memory.
import sys
import os
import json
import ctypes
import traceback

try:
    import numpy as _np
    _numpy_error = None
except BaseException as e:  # reported by _dsgd_dispatch("hello")
    _np = None
    _numpy_error = '%s: %s' % (type(e).__name__, e)

TRAIN = 0
TEST = 1

# A package, so that `import caffe.io` reaches _MissingFinder's refusal.
__path__ = []

_MISSING = ('io', 'draw', 'net_spec', 'classifier', 'detector', 'coord_map',
            'proto', 'pycaffe', '_caffe', 'layers', 'params', 'NetSpec',
            'Net', 'SGDSolver', 'NesterovSolver', 'AdaGradSolver',
            'RMSPropSolver', 'AdaDeltaSolver', 'AdamSolver', 'set_mode_cpu',
            'set_mode_gpu', 'set_device', 'get_solver', 'Classifier',
            'Detector', 'layer_type_list', 'to_proto', 'Caffe')


def __getattr__(name):
    if name in _MISSING:
        raise AttributeError(
            "module 'caffe' has no attribute %r: dsgd's caffe module gives a "
            "Python layer only caffe.Layer, its blobs, caffe.TRAIN and "
            "caffe.TEST, not pycaffe's %s" % (name, name))
    raise AttributeError("module 'caffe' has no attribute %r" % name)


class _MissingFinder:
    """Refuses `import caffe.io` and pycaffe's other submodules by name."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith('caffe.'):
            raise ImportError(
                "No module named %r: dsgd runs Python layers with its own "
                "caffe module (caffe.Layer, blobs, caffe.TRAIN, caffe.TEST), "
                "not pycaffe's submodules such as caffe.io" % fullname,
                name=fullname)
        return None


def _legacy(shape, i):
    if len(shape) > 4:
        raise ValueError('Cannot use legacy accessors on Blobs with > 4 axes.')
    if i >= len(shape) or i < -len(shape):
        return 1
    return int(shape[i])


class Blob(object):
    """A blob: data and diff as float32 numpy arrays of its shape."""

    def __init__(self, shape=()):
        self._shape = ()
        self._data = None
        self._diff = None
        self._reshape(tuple(shape))

    def _reshape(self, shape):
        shape = tuple(int(d) for d in shape)
        for d in shape:
            if d < 0:
                raise ValueError('blob dimension %d is negative' % d)
        if shape == self._shape and self._data is not None:
            return
        n = 1
        for d in shape:
            n *= d
        if self._data is not None and self._data.size == n:
            self._data = self._data.reshape(shape)
            self._diff = self._diff.reshape(shape)
        else:
            self._data = _np.zeros(shape, dtype=_np.float32)
            self._diff = _np.zeros(shape, dtype=_np.float32)
        self._shape = shape

    def reshape(self, *args, **kwargs):
        if kwargs:
            raise TypeError('Blob.reshape takes no kwargs')
        self._reshape(args)

    @property
    def data(self):
        return self._data

    @property
    def diff(self):
        return self._diff

    @property
    def shape(self):
        return self._shape

    @property
    def count(self):
        return int(self._data.size)

    @property
    def num(self):
        return _legacy(self._shape, 0)

    @property
    def channels(self):
        return _legacy(self._shape, 1)

    @property
    def height(self):
        return _legacy(self._shape, 2)

    @property
    def width(self):
        return _legacy(self._shape, 3)


class BlobVec(list):
    """A layer's parameter blobs: a list with add_blob(*shape)."""

    def add_blob(self, *args, **kwargs):
        if kwargs:
            raise TypeError('BlobVec.add_blob takes no kwargs')
        if getattr(self, '_frozen', False):
            raise RuntimeError(
                'add_blob after setup: dsgd fixes a layer\'s parameter blobs '
                'when setup returns (they are the net\'s learned weights)')
        self.append(Blob(args))


class Layer(object):
    """The base of a Python layer: dsgd sets param_str and phase, then
    calls setup and reshape once, reshape and forward each forward pass
    and backward each backward pass, as Caffe's PythonLayer does. The base
    defines setup and reshape as no-ops and neither forward nor backward,
    as pycaffe's binding does (a layer without them fails when called)."""

    type = 'Python'

    def __init__(self, *args, **kwargs):
        pass

    @property
    def blobs(self):
        b = self.__dict__.get('_dsgd_blobs')
        if b is None:
            b = self.__dict__['_dsgd_blobs'] = BlobVec()
        return b

    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        pass


class _LayerParameter(object):
    """What a layer's __init__ is given, as Caffe gives its LayerParameter."""

    def __init__(self, req):
        self.name = req['name']
        self.type = 'Python'
        self.phase = req['phase']

        class P(object):
            pass
        self.python_param = P()
        self.python_param.module = req['module']
        self.python_param.layer = req['layer']
        self.python_param.param_str = req['param_str']
        self.python_param.share_in_parallel = req['share_in_parallel']


_layers = {}
_ids = __import__('itertools').count(1)
_floats = ctypes.c_float


def _view(addr, n):
    return _np.ctypeslib.as_array((_floats * n).from_address(addr))


class _Inst(object):
    def __init__(self, obj, where):
        self.obj = obj
        self.where = where
        self.blobs = {}

    def blob(self, ref):
        b = self.blobs.get(ref['k'])
        if b is None:
            b = self.blobs[ref['k']] = Blob(ref['s'])
        return b


def _copy_in(b, ref):
    b._reshape(ref['s'])
    n = b._data.size
    if n:
        _np.copyto(b._data.reshape(-1), _view(ref['d'], n))
        _np.copyto(b._diff.reshape(-1), _view(ref['g'], n))


def _copy_out(b, ref):
    n = b._data.size
    if n != ref['n']:
        raise RuntimeError('blob of %d elements copied into one of %d' % (n, ref['n']))
    if n:
        _np.copyto(_view(ref['d'], n), b._data.reshape(-1))
        _np.copyto(_view(ref['g'], n), b._diff.reshape(-1))


def _last_line(e):
    tb = traceback.extract_tb(e.__traceback__)
    where = ''
    if tb:
        f = tb[-1]
        where = ' (%s:%d in %s)' % (f.filename, f.lineno, f.name)
    msg = ''.join(traceback.format_exception_only(type(e), e)).strip().splitlines()
    return (msg[-1] if msg else type(e).__name__) + where


def _new(req):
    where = '%s.%s' % (req['module'], req['layer'])
    try:
        import importlib
        mod = importlib.import_module(req['module'])
    except BaseException as e:
        hint = ''
        if isinstance(e, ModuleNotFoundError) and e.name == req['module'].split('.')[0]:
            hint = ('; Python looks in the current folder and PYTHONPATH, as Caffe\'s '
                    'tools do: set PYTHONPATH to the folder of %s.py' % req['module'].replace('.', '/'))
        return {'error': '%s: importing module %r: %s%s' % (where, req['module'], _last_line(e), hint),
                'traceback': traceback.format_exc()}
    cls = getattr(mod, req['layer'], None)
    if cls is None:
        return {'error': '%s: module %r (%s) has no layer class %r' % (
            where, req['module'], getattr(mod, '__file__', '?'), req['layer'])}
    if not (isinstance(cls, type) and issubclass(cls, Layer)):
        return {'error': '%s is not a caffe.Layer (a class deriving from it)' % where}
    try:
        obj = cls(_LayerParameter(req))
    except BaseException as e:
        return {'error': '%s(...): %s' % (where, _last_line(e)), 'traceback': traceback.format_exc()}
    if not isinstance(obj, Layer):
        return {'error': '%s is not a caffe.Layer' % where}
    try:
        obj.param_str = req['param_str']
        # py-faster-rcnn's Caffe (caffe-fast-rcnn) spells it param_str_,
        # and its layers read that.
        obj.param_str_ = req['param_str']
        obj.phase = req['phase']
    except BaseException as e:
        return {'error': '%s: setting param_str and phase: %s' % (where, _last_line(e))}
    lid = next(_ids)
    _layers[lid] = _Inst(obj, where)
    return {'id': lid}


def _del(req):
    _layers.pop(req['id'], None)
    return {'live': len(_layers)}


def _call(req):
    inst = _layers[req['id']]
    obj = inst.obj
    bottom = [inst.blob(r) for r in req['bottom']]
    top = [inst.blob(r) for r in req['top']]
    for b, r in zip(bottom, req['bottom']):
        _copy_in(b, r)
    for b, r in zip(top, req['top']):
        _copy_in(b, r)
    params = obj.blobs
    method = req['method']
    # Before setup dsgd holds no blobs of the layer (its __init__ may have
    # added some: they are the layer's from setup on).
    if method != 'setup':
        if len(req['params']) != len(params):
            return {'error': '%s: %d blobs in self.blobs, dsgd holds %d' % (
                inst.where, len(params), len(req['params']))}
        for b, r in zip(params, req['params']):
            if tuple(r['s']) != b.shape:
                return {'error': '%s: a blob of self.blobs has shape %s, dsgd holds %s' % (
                    inst.where, b.shape, tuple(r['s']))}
            _copy_in(b, r)
    steps = {'setup': ('setup', 'reshape'), 'reshape': ('reshape',),
             'forward': ('reshape', 'forward'), 'backward': ('backward',)}[method]
    for m in steps:
        try:
            f = getattr(obj, m)
            if m == 'backward':
                f(top, [bool(p) for p in req['prop']], bottom)
            else:
                f(bottom, top)
        except BaseException as e:
            return {'error': '%s.%s: %s' % (inst.where, m, _last_line(e)),
                    'traceback': traceback.format_exc()}
        if m == 'setup':
            params._frozen = True
    for b in params:
        if not isinstance(b, Blob):
            return {'error': '%s: self.blobs holds a %s, not a blob (use self.blobs.add_blob(*shape))' % (
                inst.where, type(b).__name__)}
    return {'bottom': [list(b.shape) for b in bottom], 'top': [list(b.shape) for b in top],
            'params': [list(b.shape) for b in params]}


def _out(req):
    inst = _layers[req['id']]
    params = inst.obj.blobs
    for r in req['bottom'] + req['top']:
        _copy_out(inst.blobs[r['k']], r)
    for b, r in zip(params, req['params']):
        _copy_out(b, r)
    return {}


def _hello(req):
    if _numpy_error is not None:
        return {'error': 'numpy cannot be imported (%s); install python3-numpy for this Python' % _numpy_error}
    return {'version': sys.version.split()[0], 'numpy': _np.__version__, 'path': sys.path}


def _dsgd_dispatch(raw):
    try:
        req = json.loads(raw)
        op = req['op']
        if op == 'hello':
            ans = _hello(req)
        elif op == 'new':
            ans = _new(req)
        elif op == 'call':
            ans = _call(req)
        elif op == 'out':
            ans = _out(req)
        elif op == 'del':
            ans = _del(req)
        elif op == 'live':
            ans = {'live': len(_layers)}
        else:
            ans = {'error': 'unknown request %r' % op}
    except BaseException as e:
        ans = {'error': "dsgd's Python bridge: %s" % _last_line(e), 'traceback': traceback.format_exc()}
    return json.dumps(ans).encode()


def _dsgd_start():
    if not hasattr(sys, 'argv'):
        sys.argv = ['']
    paths = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    sys.path[:0] = [p for p in [os.getcwd()] + paths if p not in sys.path]
    sys.meta_path.insert(0, _MissingFinder())


_dsgd_start()
