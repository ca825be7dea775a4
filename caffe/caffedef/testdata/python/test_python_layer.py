# The layers of pycaffe's python/caffe/test/test_python_layer.py, written
# for dsgd's port of that test (caffe/caffedef/python_layer_test.go).
import caffe


class SimpleLayer(caffe.Layer):
    """Multiplies its bottom by ten; backward likewise."""

    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data * 10

    def backward(self, top, propagate_down, bottom):
        bottom[0].diff[...] = top[0].diff * 10


class ExceptionLayer(caffe.Layer):
    """Fails in setup."""

    def setup(self, bottom, top):
        raise RuntimeError('raised by ExceptionLayer.setup')


class ParameterLayer(caffe.Layer):
    """One parameter blob of one element, 0 at setup; its diff is 1."""

    def setup(self, bottom, top):
        self.blobs.add_blob(1)
        self.blobs[0].data[0] = 0

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        pass

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[0] = 1


class PhaseLayer(caffe.Layer):
    """Writes its phase into a top without axes."""

    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        top[0].reshape()

    def forward(self, bottom, top):
        top[0].data[()] = self.phase
