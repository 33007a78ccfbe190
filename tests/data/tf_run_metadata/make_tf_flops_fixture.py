#!/usr/bin/env python3
"""Writes tf_convnet_train_step.pb.gz and its tfprof oracle, tf_convnet_train_step.tfprof.tsv.

Dev-time only (TensorFlow is not a dependency of stepscope or its tests):
    pip install tensorflow-cpu
    TF_ENABLE_ONEDNN_OPTS=0 python3 tests/data/tf_run_metadata/make_tf_flops_fixture.py

One training step of a small conv net (conv 5x5 3->8 SAME, ReLU, max pool 2x2, conv 3x3 8->16
stride 2 VALID, ReLU, dense 16*7*7->10, softmax cross-entropy, SGD with momentum) on a batch of
4 32x32x3 images, run by a tf.compat.v1 Session with
RunOptions(trace_level=FULL_TRACE, output_partition_graphs=True), the cost model and shape
inference on, with resource variables (TensorFlow 2's kind): an optimizer's ResourceApplyMomentum
takes the variable and its accumulator as handles (DT_RESOURCE scalars in the step stats), whose
shapes are in the graphs only (the VarHandleOp's `shape` attribute; the partition graph's
`_output_shapes` and the cost graph's output_info for every tensor). oneDNN is off so the ops are
MatMul and Conv2D, not their _Mkl* rewrites; Grappler's remapper is off so that conv1's Conv2D,
BiasAdd and Relu stay apart as in the graph tfprof counts.

The oracle: tfprof's float_ops per graph node (tf.compat.v1.profiler.profile with
ProfileOptionBuilder.float_operation() on the same graph and RunMetadata), written as
"node<TAB>op type<TAB>float_ops" for every node tfprof counts (float_ops > 0).
"""
import gzip
import os
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "tf_convnet_train_step"


def build():
    v1 = tf.compat.v1
    v1.disable_v2_behavior()  # graph mode
    v1.set_random_seed(0)
    x = v1.placeholder(tf.float32, [4, 32, 32, 3], name="images")
    labels = v1.placeholder(tf.int64, [4], name="labels")
    init = v1.truncated_normal_initializer(stddev=0.1)
    with v1.variable_scope("conv1"):
        w = v1.get_variable("w", [5, 5, 3, 8], initializer=init, use_resource=True)
        b = v1.get_variable("b", [8], initializer=v1.zeros_initializer(), use_resource=True)
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), b))
    h = tf.nn.max_pool2d(h, 2, 2, "VALID")  # [4, 16, 16, 8]
    with v1.variable_scope("conv2"):
        w = v1.get_variable("w", [3, 3, 8, 16], initializer=init, use_resource=True)
        h = tf.nn.relu(tf.nn.conv2d(h, w, [1, 2, 2, 1], "VALID"))  # [4, 7, 7, 16]
    with v1.variable_scope("dense"):
        flat = tf.reshape(h, [4, 7 * 7 * 16])
        w = v1.get_variable("w", [7 * 7 * 16, 10], initializer=init, use_resource=True)
        b = v1.get_variable("b", [10], initializer=v1.zeros_initializer(), use_resource=True)
        logits = tf.matmul(flat, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    probs = tf.nn.softmax(logits, name="probs")
    train = v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    return x, labels, loss, probs, train


def main():
    x, labels, loss, probs, train = build()
    v1 = tf.compat.v1
    # The cost model fills the cost graph; infer_shapes writes `_output_shapes` on the partition
    # graph; Grappler's remapper is off so that Conv2D + BiasAdd + Relu stay three ops, as the graph
    # tfprof counts has them.
    from tensorflow.core.protobuf import rewriter_config_pb2
    rewrite = rewriter_config_pb2.RewriterConfig(remapping=rewriter_config_pb2.RewriterConfig.OFF)
    config = v1.ConfigProto(graph_options=v1.GraphOptions(build_cost_model=1, infer_shapes=True, rewrite_options=rewrite),
                            inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    rng = np.random.RandomState(0)
    feed = {x: rng.rand(4, 32, 32, 3).astype("float32"), labels: rng.randint(0, 10, size=4)}
    with v1.Session(config=config) as sess:
        sess.run(v1.global_variables_initializer())
        sess.run([train, loss], feed_dict=feed)  # warm up
        options = v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE, output_partition_graphs=True)
        meta = v1.RunMetadata()
        sess.run([train, loss, probs], feed_dict=feed, options=options, run_metadata=meta)
        graph = sess.graph
    data = meta.SerializeToString(deterministic=True)
    with open(os.path.join(HERE, NAME + ".pb.gz"), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:
        out.write(data)
    print(f"{NAME}.pb.gz: {len(data)} bytes, {len(meta.partition_graphs)} partition graphs, "
          f"{len(meta.cost_graph.node)} cost graph nodes")

    opts = v1.profiler.ProfileOptionBuilder.float_operation()
    opts["output"] = "none"
    result = v1.profiler.profile(graph, run_meta=meta, cmd="scope", options=opts)
    op_types = {n.name: n.op for n in graph.as_graph_def().node}
    rows = []

    def walk(node):
        for child in node.children:
            if child.float_ops > 0:
                rows.append((child.name, op_types.get(child.name, "?"), child.float_ops))
            walk(child)

    walk(result)
    with open(os.path.join(HERE, NAME + ".tfprof.tsv"), "w") as f:
        f.write(f"# tfprof float_ops per node ({tf.__version__}, float_operation(), cmd=scope); total "
                f"{result.total_float_ops}\n")
        for name, op_type, flops in sorted(rows):
            f.write(f"{name}\t{op_type}\t{flops}\n")
    print(f"{NAME}.tfprof.tsv: {len(rows)} nodes, total {result.total_float_ops}")


if __name__ == "__main__":
    sys.exit(main())
