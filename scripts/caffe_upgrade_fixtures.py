#!/usr/bin/env python3
"""Extracts the nets of Caffe's upgrade tests as fixtures.

Reads BVLC/caffe's src/caffe/test/test_upgrade_proto.cpp (path given) and
writes, for PaddingLayerUpgradeTest and NetUpgradeTest, each test's nets as
text-format files under the output folder:
  PaddingLayerUpgradeTest.TestSimple.input.prototxt / .expected.prototxt
  NetUpgradeTest.TestSimple.v0.prototxt / .v1.prototxt / .v2.prototxt
config's TestCaffeUpgrade checks that dsgd reads each net of a test as the
same net. Usage: caffe_upgrade_fixtures.py test_upgrade_proto.cpp OUTDIR
"""
import os
import re
import sys

ROLES = {
    "input_proto": "input", "expected_output_proto": "expected",
    "v0_proto": "v0", "expected_v1_proto": "v1", "expected_v2_proto": "v2",
}


def main():
    src, out = sys.argv[1], sys.argv[2]
    text = open(src).read()
    tests = re.split(r"\nTEST_F\(", text)[1:]
    os.makedirs(out, exist_ok=True)
    n = 0
    for t in tests:
        m = re.match(r"(\w+), (\w+)\)", t)
        cls, name = m.group(1), m.group(2)
        if cls not in ("PaddingLayerUpgradeTest", "NetUpgradeTest"):
            continue
        for dm in re.finditer(r"const string& (\w+) =\s*((?:\s*\"(?:[^\"\\]|\\.)*\")+)\s*;", t):
            role = ROLES.get(dm.group(1))
            if role is None:
                continue
            parts = re.findall(r"\"((?:[^\"\\]|\\.)*)\"", dm.group(2))
            body = "\n".join(p.rstrip() for p in parts) + "\n"
            if cls == "NetUpgradeTest" and name == "TestAllParams" and role == "expected":
                role = "v1"
            if cls == "NetUpgradeTest" and name == "TestAllParams" and role == "input":
                role = "v0"
            with open(os.path.join(out, f"{cls}.{name}.{role}.prototxt"), "w") as f:
                f.write(body)
            n += 1
    print(f"wrote {n} nets to {out}")


if __name__ == "__main__":
    main()
