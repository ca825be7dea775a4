# Python layers for engine/pylayer's tests: one per way a layer can go
# wrong, a layer to check by finite differences, and a counter for the
# concurrency test.
import numpy as np

import caffe


class Square(caffe.Layer):
    """top = w[c] * x**2 over channels c of a (N, C) bottom; w learned,
    set to 1 + c/10 at setup."""

    def setup(self, bottom, top):
        self.blobs.add_blob(bottom[0].shape[1])
        self.blobs[0].data[...] = 1 + np.arange(bottom[0].shape[1]) / 10.0

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data * bottom[0].data ** 2

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[...] += np.sum(top[0].diff * bottom[0].data ** 2, axis=0)
        if propagate_down[0]:
            bottom[0].diff[...] = 2 * self.blobs[0].data * bottom[0].data * top[0].diff


class Copy(caffe.Layer):
    """top = bottom + the instance's number of forwards (for the
    concurrency test: each instance counts its own)."""

    def setup(self, bottom, top):
        self.calls = 0

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        self.calls += 1
        top[0].data[...] = bottom[0].data + self.calls

    def backward(self, top, propagate_down, bottom):
        bottom[0].diff[...] = top[0].diff


class NoForward(caffe.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)


class ForwardRaises(caffe.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        raise ValueError('bad batch %d' % bottom[0].num)


class UsesCaffeIO(caffe.Layer):
    def setup(self, bottom, top):
        import caffe.io  # noqa: F401


class UsesNet(caffe.Layer):
    def setup(self, bottom, top):
        caffe.Net('x.prototxt', caffe.TEST)


class LateBlob(caffe.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        self.blobs.add_blob(2)


class ReshapesBottom(caffe.Layer):
    def reshape(self, bottom, top):
        bottom[0].reshape(1)
        top[0].reshape(1)


class NotALayer(object):
    pass


class Attributes(caffe.Layer):
    """Checks the blob and layer attributes pycaffe gives."""

    def setup(self, bottom, top):
        b = bottom[0]
        got = (tuple(b.shape), b.count, b.num, b.channels, b.height, b.width,
               b.data.dtype.name, b.diff.shape, self.param_str, self.param_str_, self.type,
               len(self.blobs), self.phase)
        want = ((2, 3, 4), 24, 2, 3, 4, 1, 'float32', (2, 3, 4), 'p=1', 'p=1', 'Python', 0, caffe.TRAIN)
        if got != want:
            raise AssertionError('got %r, want %r' % (got, want))

    def reshape(self, bottom, top):
        top[0].reshape(2, 3)
        if top[0].data.shape != (2, 3):
            raise AssertionError('top shape %r' % (top[0].data.shape,))

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data.reshape(2, -1)[:, :3]


class Calls(caffe.Layer):
    """Records the order of dsgd's calls into its top: 1 setup, 2
    reshape, 3 forward (the last four calls, newest last)."""

    def setup(self, bottom, top):
        self.log = [1]

    def reshape(self, bottom, top):
        self.log.append(2)
        top[0].reshape(4)

    def forward(self, bottom, top):
        self.log.append(3)
        top[0].data[...] = ([0, 0, 0, 0] + self.log)[-4:]


class NoBackward(caffe.Layer):
    """Forward only: pycaffe's base class has no backward either."""

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data


class BlobInInit(caffe.Layer):
    """Adds its blob in __init__, before setup."""

    def __init__(self, param):
        caffe.Layer.__init__(self, param)
        self.blobs.add_blob(2)
        self.blobs[0].data[...] = [3, 4]

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        top[0].data[...] = bottom[0].data * self.blobs[0].data[0]

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[0] += (top[0].diff * bottom[0].data).sum()
