#!/usr/bin/env python3
"""Writes proto/stepscope/tf/graph.proto (and its proto2 part graph_debug_info.proto): TensorFlow's graph and cost-graph messages (everything a
RunMetadata's partition_graphs, function_graphs and cost_graph reach), with TensorFlow's names,
field numbers, types and options, in package stepscope.tf. Taken from the descriptors of the
installed TensorFlow (a development-time tool; the build uses the committed file).

    python3 scripts/proto/make_tf_graph_proto.py            # rewrite the file
    python3 scripts/proto/make_tf_graph_proto.py --check    # exit 1 if it differs
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
from google.protobuf import descriptor_pb2  # noqa: E402
from google.protobuf import descriptor_pool  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402,F401  (registers the files)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "proto", "stepscope", "tf")

# In dependency order. Types of tensor.proto / step_stats.proto of ours are imported instead.
FILES = [
    "tensorflow/core/framework/versions.proto",
    "tensorflow/core/framework/full_type.proto",
    "tensorflow/core/framework/resource_handle.proto",
    "tensorflow/core/framework/tensor.proto",
    "tensorflow/core/framework/attr_value.proto",
    "tensorflow/core/framework/node_def.proto",
    "tensorflow/core/framework/op_def.proto",
    "tensorflow/core/framework/function.proto",
    "tensorflow/core/framework/graph.proto",
    "tensorflow/core/framework/cost_graph.proto",
]

TYPES = {
    descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE: "double",
    descriptor_pb2.FieldDescriptorProto.TYPE_FLOAT: "float",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT64: "int64",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT64: "uint64",
    descriptor_pb2.FieldDescriptorProto.TYPE_INT32: "int32",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_BOOL: "bool",
    descriptor_pb2.FieldDescriptorProto.TYPE_STRING: "string",
    descriptor_pb2.FieldDescriptorProto.TYPE_BYTES: "bytes",
    descriptor_pb2.FieldDescriptorProto.TYPE_UINT32: "uint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT32: "sint32",
    descriptor_pb2.FieldDescriptorProto.TYPE_SINT64: "sint64",
}
LABEL_REPEATED = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
PROTO2 = [False]  # whether the file being written is proto2 (fields then carry `optional`)


def type_name(name):
    assert name.startswith(".tensorflow."), name
    return name[len(".tensorflow."):]


def field_type(field, messages):
    if field.type in TYPES:
        return TYPES[field.type]
    return type_name(field.type_name)


def options(field):
    opts = []
    if field.options.HasField("packed"):
        opts.append("packed = " + ("true" if field.options.packed else "false"))
    if field.options.deprecated:
        opts.append("deprecated = true")
    return " [" + ", ".join(opts) + "]" if opts else ""


def emit_enum(enum, indent, lines):
    lines.append(f"{indent}enum {enum.name} {{")
    if enum.options.allow_alias:
        lines.append(f"{indent}  option allow_alias = true;")
    for value in enum.value:
        dep = " [deprecated = true]" if value.options.deprecated else ""
        lines.append(f"{indent}  {value.name} = {value.number}{dep};")
    lines.append(f"{indent}}}")


def emit_message(message, indent, lines, maps):
    lines.append(f"{indent}message {message.name} {{")
    inner = indent + "  "
    for nested in message.nested_type:
        if nested.options.map_entry:
            continue
        emit_message(nested, inner, lines, maps)
    for enum in message.enum_type:
        emit_enum(enum, inner, lines)
    real_oneofs = {}
    for field in message.field:
        if field.HasField("oneof_index") and not field.proto3_optional:
            real_oneofs.setdefault(field.oneof_index, []).append(field)
    emitted_oneofs = set()
    for field in message.field:
        if field.HasField("oneof_index") and not field.proto3_optional:
            index = field.oneof_index
            if index in emitted_oneofs:
                continue
            emitted_oneofs.add(index)
            lines.append(f"{inner}oneof {message.oneof_decl[index].name} {{")
            for member in real_oneofs[index]:
                lines.append(f"{inner}  {field_type(member, maps)} {member.name} = {member.number}{options(member)};")
            lines.append(f"{inner}}}")
            continue
        entry = maps.get(field.type_name)
        if entry is not None and field.label == LABEL_REPEATED:
            key = field_type(entry.field[0], maps)
            value = field_type(entry.field[1], maps)
            lines.append(f"{inner}map<{key}, {value}> {field.name} = {field.number}{options(field)};")
            continue
        if field.label == LABEL_REPEATED:
            label = "repeated "
        elif field.proto3_optional or PROTO2[0]:
            label = "optional "
        else:
            label = ""
        lines.append(f"{inner}{label}{field_type(field, maps)} {field.name} = {field.number}{options(field)};")
    for reserved in message.reserved_range:
        end = reserved.end - 1
        lines.append(f"{inner}reserved {reserved.start}" + (f" to {end};" if end != reserved.start else ";"))
    if message.reserved_name:
        lines.append(f"{inner}reserved " + ", ".join(f'"{n}"' for n in message.reserved_name) + ";")
    lines.append(f"{indent}}}")


def collect_maps(prefix, message, maps):
    for nested in message.nested_type:
        full = f"{prefix}.{nested.name}"
        if nested.options.map_entry:
            maps[full] = nested
        collect_maps(full, nested, maps)


def render(files, syntax, imports, out_name):
    pool = descriptor_pool.Default()
    protos = []
    for name in files:
        proto = descriptor_pb2.FileDescriptorProto()
        pool.FindFileByName(name).CopyToProto(proto)
        assert (proto.syntax or "proto2") == syntax, name
        protos.append(proto)
    maps = {}
    for proto in protos:
        for message in proto.message_type:
            collect_maps(f".tensorflow.{message.name}", message, maps)
    PROTO2[0] = syntax == "proto2"
    lines = [
        "// GENERATED by scripts/proto/make_tf_graph_proto.py from TensorFlow's descriptors; do not edit.",
        "// TensorFlow's " + ", ".join(os.path.basename(f) for f in files) + " (tensorflow/core/framework/)",
        "// with TensorFlow's names, field numbers, types and options (Apache License 2.0, The",
        "// TensorFlow Authors), so the graphs of a RunMetadata move between binary and text without loss.",
        f'syntax = "{syntax}";',
        "",
        "package stepscope.tf;",
        "",
    ]
    for imported in imports:
        lines.append(f'import "{imported}";')
    lines.append("")
    for proto in protos:
        lines.append(f"// --- {proto.name}")
        for enum in proto.enum_type:
            emit_enum(enum, "", lines)
        for message in proto.message_type:
            emit_message(message, "", lines, maps)
        lines.append("")
    return os.path.join(OUT_DIR, out_name), "\n".join(lines)


def main():
    outputs = [
        render(["tensorflow/core/framework/graph_debug_info.proto"], "proto2", [], "graph_debug_info.proto"),
        render(FILES, "proto3", ["stepscope/tf/tensor.proto", "stepscope/tf/graph_debug_info.proto"],
               "graph.proto"),
    ]
    status = 0
    for path, text in outputs:
        if "--check" in sys.argv:
            with open(path) as f:
                if f.read() != text:
                    print(f"{path} differs from TensorFlow's descriptors; rerun without --check")
                    status = 1
            continue
        with open(path, "w") as f:
            f.write(text)
        print("wrote", path)
    if "--check" in sys.argv and status == 0:
        print("graph protos match TensorFlow's descriptors")
    return status


if __name__ == "__main__":
    sys.exit(main())
