#!/usr/bin/env python3
"""Where the bytes of a Perfetto protobuf trace go, plain and gzipped (docs/formats.md §7).

    python3 scripts/bench/pftrace_bytes.py TRACE.pftrace [CHROME.json] [--top 16]

Walks the file's wire format (no schema library) and attributes every byte to the field it
encodes, by message and field: `TracePacket.timestamp`, `TrackEvent.flow_ids`, an interned
string's text (`InternedData.*.text`), an input list's elements (`DebugAnnotation.array_values`),
the length prefixes of nested messages (`... (framing)`), and so on. For each, the plain bytes
and the gzip cost at the level stepscope writes (6): how much smaller the gzipped file gets when
that field's bytes are left out (so the figures do not add up exactly: gzip shares matches
between fields). With CHROME.json (our Chrome JSON of the same trace), also the gzipped size of
each kind of JSON value the same way (timestamps, durations, names, args, flow ids), and both
ratios. A development tool: nothing in the product or CI runs it.
"""
import argparse
import collections
import re
import zlib

# Message of each length-delimited field that is a message (Perfetto's numbers), by parent.
NESTED = {
    'Trace': {1: 'TracePacket'},
    'TracePacket': {11: 'TrackEvent', 60: 'TrackDescriptor', 6: 'ClockSnapshot', 12: 'InternedData',
                    59: 'TracePacketDefaults'},
    'TracePacketDefaults': {11: 'TrackEventDefaults'},
    'ClockSnapshot': {1: 'Clock'},
    'TrackDescriptor': {3: 'ProcessDescriptor', 4: 'ThreadDescriptor', 8: 'CounterDescriptor'},
    'TrackEvent': {4: 'DebugAnnotation'},
    'DebugAnnotation': {12: 'DebugAnnotation'},
    'InternedData': {1: 'Interned', 2: 'Interned', 3: 'Interned', 29: 'Interned'},
}
NAMES = {
    'TracePacket': {8: 'timestamp', 10: 'trusted_packet_sequence_id', 13: 'sequence_flags',
                    11: 'track_event', 12: 'interned_data', 6: 'clock_snapshot', 60: 'track_descriptor',
                    59: 'trace_packet_defaults'},
    'TrackEvent': {3: 'category_iids', 9: 'type', 10: 'name_iid', 23: 'name', 11: 'track_uuid',
                   4: 'debug_annotations', 30: 'counter_value', 47: 'flow_ids', 48: 'terminating_flow_ids'},
    'DebugAnnotation': {1: 'name_iid', 3: 'uint_value', 4: 'int_value', 5: 'double_value', 6: 'string_value',
                        12: 'array_values', 17: 'string_value_iid'},
    'Interned': {1: 'iid', 2: 'text'},
}


def varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def walk(data, message, base, spans):
    """Appends (start, end, label) for every leaf field and every nested message's framing."""
    at = 0
    while at < len(data):
        start = at
        tag, at = varint(data, at)
        number, wire_type = tag >> 3, tag & 7
        name = NAMES.get(message, {}).get(number, str(number))
        label = f'{message}.{name}'
        if wire_type == 0:
            _, at = varint(data, at)
        elif wire_type == 1:
            at += 8
        elif wire_type == 5:
            at += 4
        elif wire_type == 2:
            length, payload = varint(data, at)
            nested = NESTED.get(message, {}).get(number)
            if nested:
                spans.append((base + start, base + payload, label + ' (framing)'))
                walk(data[payload:payload + length], nested, base + payload, spans)
                at = payload + length
                continue
            at = payload + length
        else:
            raise ValueError(f'wire type {wire_type} at {base + start}')
        spans.append((base + start, base + at, label))


def gz(data):
    return len(zlib.compress(bytes(data), 6))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('trace')
    parser.add_argument('json', nargs='?')
    parser.add_argument('--top', type=int, default=16)
    args = parser.parse_args()
    data = open(args.trace, 'rb').read()
    spans = []
    walk(data, 'Trace', 0, spans)
    total_gz = gz(data)
    plain = collections.Counter()
    for start, end, label in spans:
        plain[label] += end - start
    rows = []
    for label, size in plain.items():
        kept = bytearray()
        for start, end, other in spans:
            if other != label:
                kept += data[start:end]
        rows.append((total_gz - gz(kept), size, label))
    print(f'{args.trace}: {len(data)} bytes, gzipped {total_gz}')
    print(f'  {"field":52s} {"plain":>9s} {"gzip cost":>10s}')
    for cost, size, label in sorted(rows, reverse=True)[:args.top]:
        print(f'  {label:52s} {size:9d} {cost:10d}  ({100 * cost / total_gz:4.1f}% of the gzipped file)')
    if args.json:
        text = open(args.json, 'rb').read()
        json_gz = gz(text)
        print(f'{args.json}: {len(text)} bytes, gzipped {json_gz}; '
              f'ratio {len(data) / len(text):.3f}, gzipped {total_gz / json_gz:.3f}')
        for what, pattern, blank in [('ts', rb'"ts":[-0-9.]+', b'"ts":0'), ('dur', rb'"dur":[-0-9.]+', b'"dur":0'),
                                     ('name', rb'"name":"[^"]*"', b'"name":""'), ('id', rb'"id":[0-9]+', b'"id":0'),
                                     ('args', rb'"args":\{[^{}]*(\{[^{}]*\}[^{}]*)*\}', b'"args":{}')]:
            print(f'  JSON {what:6s} values: gzip cost {json_gz - gz(re.sub(pattern, blank, text)):8d}')


if __name__ == '__main__':
    main()
