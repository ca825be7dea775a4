# The layer of pycaffe's test_python_layer_with_param_str.py, written for
# dsgd's port of that test.
import caffe


class SimpleParamLayer(caffe.Layer):
    """Multiplies its bottom by the number its param_str holds."""

    def setup(self, bottom, top):
        try:
            self.value = float(self.param_str)
        except ValueError:
            raise ValueError("Parameter string must be a legible float")

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.value * bottom[0].data

    def backward(self, top, propagate_down, bottom):
        bottom[0].diff[...] = self.value * top[0].diff
