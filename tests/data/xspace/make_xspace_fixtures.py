#!/usr/bin/env python3
"""Writes the XSpace fixtures of tests/data/xspace with TensorFlow 2 and JAX on the CPU.

Dev-time only (neither is a dependency of stepscope or its CI):
    python3 -m venv /tmp/xspace-venv && /tmp/xspace-venv/bin/pip install tensorflow-cpu jax
    /tmp/xspace-venv/bin/python tests/data/xspace/make_xspace_fixtures.py [tf|jax|all]

tf:  a small Keras MLP, 3 training steps under tf.profiler.experimental.start/stop
     -> tf2_keras_mlp_cpu.xplane.pb.gz
jax: a jitted MLP training step, 3 steps under jax.profiler.trace
     -> jax_mlp_cpu.xplane.pb.gz
Both are written under a temporary log directory (plugins/profile/<run>/<host>.xplane.pb) and
copied here gzipped, with the host name replaced by "fixturehost" in the file name only.
"""
import glob
import gzip
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def copy_out(logdir, target):
    files = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))
    if not files:
        raise SystemExit(f"no .xplane.pb under {logdir}")
    with open(files[0], "rb") as f:
        data = f.read()
    with open(os.path.join(HERE, target), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:
        out.write(data)
    print(f"{target}: {len(data)} bytes from {files[0]}")


def make_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(0)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(32,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.RandomState(0).rand(64, 32).astype("float32")
    y = np.random.RandomState(1).randint(0, 10, size=(64,))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)  # warm up: trace and compile
    logdir = tempfile.mkdtemp(prefix="tfprof")
    tf.profiler.experimental.start(logdir)
    for step in range(3):
        with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
            model.train_on_batch(x[:32], y[:32])
    tf.profiler.experimental.stop()
    copy_out(logdir, "tf2_keras_mlp_cpu.xplane.pb.gz")
    shutil.rmtree(logdir)


def make_jax():
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    k1, k2, k3 = jax.random.split(key, 3)
    params = {"w1": jax.random.normal(k1, (32, 64)) * 0.1, "w2": jax.random.normal(k2, (64, 10)) * 0.1}
    x = jax.random.normal(k3, (32, 32))
    y = jnp.arange(32) % 10

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"])
        logits = h @ p["w2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def train_step(p, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - 0.1 * g, p, grads), loss

    params, loss = train_step(params, x, y)  # compile outside the trace
    loss.block_until_ready()
    logdir = tempfile.mkdtemp(prefix="jaxprof")
    with jax.profiler.trace(logdir):
        for step in range(3):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                params, loss = train_step(params, x, y)
                loss.block_until_ready()
    copy_out(logdir, "jax_mlp_cpu.xplane.pb.gz")
    shutil.rmtree(logdir)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what in ("tf", "all"):
        make_tf()
    if what in ("jax", "all"):
        make_jax()
