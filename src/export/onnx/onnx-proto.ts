// The slice of ONNX's protobuf schema (onnx/onnx.proto, IR version 8) that the exporter writes,
// declared through protobufjs's reflection API. Why this and not a generated module or onnx-proto:
// protobufjs is well kept, already a dependency, runs unchanged in the browser worker, and a
// descriptor of the dozen messages we use (with ONNX's own field numbers) is shorter to review than
// a generated file; fields we never write are simply absent (protobuf readers skip nothing, they
// just see defaults).

import protobuf from 'protobufjs';

/** TensorProto.DataType values used here. */
export const DataType = { FLOAT: 1, INT64: 7, BOOL: 9, FLOAT16: 10 } as const;
export type DataTypeId = (typeof DataType)[keyof typeof DataType];

/** AttributeProto.AttributeType values used here. */
export const AttributeType = { FLOAT: 1, INT: 2, TENSOR: 4, INTS: 7 } as const;

const rep = 'repeated';
const root = protobuf.Root.fromJSON({
  nested: {
    onnx: {
      nested: {
        StringStringEntryProto: { fields: { key: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
        OperatorSetIdProto: { fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } } },
        TensorProto: {
          fields: {
            dims: { rule: rep, type: 'int64', id: 1 },
            dataType: { type: 'int32', id: 2 },
            name: { type: 'string', id: 8 },
            rawData: { type: 'bytes', id: 9 },
            externalData: { rule: rep, type: 'StringStringEntryProto', id: 13 },
            // DataLocation: 0 DEFAULT (raw_data inside the message), 1 EXTERNAL (external_data says where).
            dataLocation: { type: 'int32', id: 14 },
          },
        },
        AttributeProto: {
          fields: {
            name: { type: 'string', id: 1 },
            f: { type: 'float', id: 2 },
            i: { type: 'int64', id: 3 },
            t: { type: 'TensorProto', id: 5 },
            ints: { rule: rep, type: 'int64', id: 8 },
            type: { type: 'int32', id: 20 },
          },
        },
        NodeProto: {
          fields: {
            input: { rule: rep, type: 'string', id: 1 },
            output: { rule: rep, type: 'string', id: 2 },
            name: { type: 'string', id: 3 },
            opType: { type: 'string', id: 4 },
            attribute: { rule: rep, type: 'AttributeProto', id: 5 },
            domain: { type: 'string', id: 7 },
          },
        },
        Dimension: { fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } } },
        TensorShapeProto: { fields: { dim: { rule: rep, type: 'Dimension', id: 1 } } },
        TypeProtoTensor: { fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } } },
        TypeProto: { fields: { tensorType: { type: 'TypeProtoTensor', id: 1 } } },
        ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
        GraphProto: {
          fields: {
            node: { rule: rep, type: 'NodeProto', id: 1 },
            name: { type: 'string', id: 2 },
            initializer: { rule: rep, type: 'TensorProto', id: 5 },
            input: { rule: rep, type: 'ValueInfoProto', id: 11 },
            output: { rule: rep, type: 'ValueInfoProto', id: 12 },
          },
        },
        ModelProto: {
          fields: {
            irVersion: { type: 'int64', id: 1 },
            producerName: { type: 'string', id: 2 },
            producerVersion: { type: 'string', id: 3 },
            graph: { type: 'GraphProto', id: 7 },
            opsetImport: { rule: rep, type: 'OperatorSetIdProto', id: 8 },
          },
        },
      },
    },
  },
});

const ModelProto = root.lookupType('onnx.ModelProto');

export interface TensorMsg {
  name: string;
  dims: number[];
  dataType: DataTypeId;
  rawData?: Uint8Array;
  externalData?: { key: string; value: string }[];
  dataLocation?: number;
}
export interface AttributeMsg {
  name: string;
  type: number;
  f?: number;
  i?: number;
  t?: TensorMsg;
  ints?: number[];
}
export interface NodeMsg {
  input: string[];
  output: string[];
  name: string;
  opType: string;
  attribute: AttributeMsg[];
}
/** A dimension is a fixed size or a symbolic name (transformers.js resolves `batch_size`, others to 0). */
export type Dim = number | string;
export interface ValueInfoMsg {
  name: string;
  elemType: DataTypeId;
  shape: Dim[];
}
export interface GraphMsg {
  name: string;
  node: NodeMsg[];
  initializer: TensorMsg[];
  input: ValueInfoMsg[];
  output: ValueInfoMsg[];
}

/** ONNX IR version 8 with opset 17 (ORT ≥ 1.14, onnxruntime-web included). */
export const IR_VERSION = 8;
export const OPSET = 17;

function valueInfo(v: ValueInfoMsg) {
  return {
    name: v.name,
    type: { tensorType: { elemType: v.elemType, shape: { dim: v.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } },
  };
}

/** Serializes a ModelProto holding `graph`. */
export function encodeModel(graph: GraphMsg, producerVersion: string): Uint8Array {
  const msg = ModelProto.fromObject({
    irVersion: IR_VERSION,
    producerName: 'webgrpo',
    producerVersion,
    opsetImport: [{ domain: '', version: OPSET }],
    graph: { ...graph, input: graph.input.map(valueInfo), output: graph.output.map(valueInfo) },
  });
  return ModelProto.encode(msg).finish();
}
