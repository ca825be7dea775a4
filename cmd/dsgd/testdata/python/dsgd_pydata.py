# Python layers for cmd/dsgd's TestPythonDataLayerTrains: a data layer
# with no bottoms, as FCN's VOCSegDataLayer (its tops filled in forward),
# and a layer with a learned blob.
import json

import numpy as np

import caffe


class BlobsDataLayer(caffe.Layer):
    """Batches of three separable classes: item i has label i % 3 and a
    feature vector peaked at the label's third of the features, plus
    noise from a generator seeded by param_str's "seed"."""

    def setup(self, bottom, top):
        if len(bottom) != 0:
            raise Exception('BlobsDataLayer takes no bottom')
        if len(top) != 2:
            raise Exception('BlobsDataLayer needs two tops: data and label')
        p = json.loads(self.param_str)
        self.batch = int(p['batch'])
        self.dim = int(p['dim'])
        self.rng = np.random.RandomState(int(p.get('seed', 1)))
        self.count = 0

    def reshape(self, bottom, top):
        top[0].reshape(self.batch, self.dim)
        top[1].reshape(self.batch)

    def forward(self, bottom, top):
        labels = np.arange(self.batch) % 3
        x = self.rng.normal(0, 0.1, (self.batch, self.dim)).astype(np.float32)
        third = self.dim // 3
        for i, l in enumerate(labels):
            x[i, l * third:(l + 1) * third] += 1
        top[0].data[...] = x
        top[1].data[...] = labels
        self.count += 1

    def backward(self, top, propagate_down, bottom):
        pass


class LearnedScale(caffe.Layer):
    """top = w * bottom with one learned scalar w, 0.5 at setup."""

    def setup(self, bottom, top):
        self.blobs.add_blob(1)
        self.blobs[0].data[0] = 0.5

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data[0] * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        self.blobs[0].diff[0] += np.sum(top[0].diff * bottom[0].data)
        if propagate_down[0]:
            bottom[0].diff[...] = self.blobs[0].data[0] * top[0].diff


class FailsOnThird(BlobsDataLayer):
    """BlobsDataLayer whose third forward raises, as a data layer whose
    file is unreadable."""

    def forward(self, bottom, top):
        if self.count == 2:
            raise IOError('cannot read batch 3')
        BlobsDataLayer.forward(self, bottom, top)


class VaryingSizeData(caffe.Layer):
    """One image a batch, of a size that changes each batch (as FCN's
    VOCSegDataLayer reshapes its tops to each image in reshape): 1x1xHxW
    data whose label is 1 when its left half is the brighter."""

    def setup(self, bottom, top):
        self.rng = np.random.RandomState(5)
        self.sizes = [(4, 6), (5, 8), (6, 4)]
        self.i = 0

    def reshape(self, bottom, top):
        global CURRENT
        h, w = self.sizes[self.i % len(self.sizes)]
        CURRENT = (h, w)
        top[0].reshape(1, 1, h, w)
        top[1].reshape(1)

    def forward(self, bottom, top):
        h, w = top[0].data.shape[2:]
        label = self.i % 2
        x = self.rng.uniform(0, 0.2, (h, w))
        if label:
            x[:, :w // 2] += 1
        else:
            x[:, w // 2:] += 1
        top[0].data[0, 0] = x
        top[1].data[0] = label
        self.i += 1


CURRENT = None


class ShapeProbe(caffe.Layer):
    """Passes its bottom through, and fails unless the bottom has the size
    VaryingSizeData made this batch: the layers between reshaped."""

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].shape)

    def forward(self, bottom, top):
        if tuple(bottom[0].shape[2:]) != CURRENT:
            raise AssertionError('bottom %s, the batch is %s' % (bottom[0].shape, CURRENT))
        top[0].data[...] = bottom[0].data

    def backward(self, top, propagate_down, bottom):
        if propagate_down[0]:
            bottom[0].diff[...] = top[0].diff
