#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_alignment_event (corpus/alignment_event/)
in the byte layout described atop fuzz_alignment_event.cpp: a valid event
and near misses of it, one rule broken in each."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'corpus', 'alignment_event')
TIMESTAMP, DURATION, SENONES, NUM_SENONES, MODEL, UTTERANCE, OTHER, SEQNUM = range(8)
U64, I64, INT, UINT, STRING, BYTES, DOUBLE, BUFFER = range(8)


def num(name, type_, value):
    return bytes([name, type_]) + struct.pack('<Q', value & (2**64 - 1))


def text(name, value):
    return bytes([name, STRING, len(value)]) + value


def senones(values, offset=0, extra=b''):
    data = struct.pack('<%di' % len(values), *values) + extra
    return bytes([SENONES, BYTES, len(data), offset]) + data


def event(fields, name=0, type_=0):
    return bytes([name, type_]) + b''.join(fields)


def valid(**change):
    fields = {
        'ts': num(TIMESTAMP, U64, 1230000000),
        'dur': num(DURATION, U64, 10000000),
        'sen': senones([-1, 0, 2, 2, 1, -1], offset=1),
        'num': num(NUM_SENONES, INT, 3),
        'model': text(MODEL, b'model/en-us'),
        'utt': num(UTTERANCE, UINT, 2),
    }
    fields.update(change)
    return [f for f in fields.values() if f is not None]


SEEDS = {
    'valid': event(valid()),
    'downstream': event(valid(), type_=1),
    'other_name': event(valid(), name=1),
    'no_model': event(valid(model=None)),
    'invalid_time': event(valid(ts=num(TIMESTAMP, U64, -1))),
    'zero_duration': event(valid(dur=num(DURATION, U64, 0))),
    'senone_out_of_range': event(valid(sen=senones([0, 3]))),
    'ragged_senones': event(valid(sen=senones([1], extra=b'\x01'))),
    'no_frames': event(valid(sen=senones([]))),
    'wrong_types': event(valid(ts=num(TIMESTAMP, I64, 5), num=num(NUM_SENONES, UINT, 3),
                               sen=bytes([SENONES, BUFFER, 4]) + b'\0\0\0\0')),
    # The frame duration's bound (one second) and the end of the last frame
    # (timestamp + frames x duration <= G_MAXINT64): the six frames end one
    # nanosecond too late.
    'long_duration': event(valid(dur=num(DURATION, U64, 1000000001))),
    'end_overflows': event(valid(ts=num(TIMESTAMP, U64, 2**63 - 6 * 10000000 + 1))),
    # The optional segment seqnum, and one of the wrong type.
    'seqnum': event(valid(seq=num(SEQNUM, UINT, 4711))),
    'seqnum_wrong_type': event(valid(seq=num(SEQNUM, INT, 4711))),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name + '.bin'), 'wb') as f:
        f.write(data)
