// A small builder for ONNX graphs: named nodes with fresh output names, constants and
// initializers, so the Qwen3 graph reads as the model's math rather than as protobuf plumbing.

import { AttributeType, DataType, type AttributeMsg, type DataTypeId, type GraphMsg, type NodeMsg, type TensorMsg, type ValueInfoMsg } from './onnx-proto.ts';

/** Attribute values: a number is INT unless wrapped as { float }, an array is INTS. */
export type AttrValue = number | number[] | { float: number } | { tensor: TensorMsg };

export class GraphBuilder {
  private readonly nodes: NodeMsg[] = [];
  private readonly initializers: TensorMsg[] = [];
  private readonly inputs: ValueInfoMsg[] = [];
  private readonly outputs: ValueInfoMsg[] = [];
  private readonly int64Constants = new Map<string, string>();
  private counter = 0;

  input(name: string, elemType: DataTypeId, shape: ValueInfoMsg['shape']): string {
    this.inputs.push({ name, elemType, shape });
    return name;
  }

  output(name: string, elemType: DataTypeId, shape: ValueInfoMsg['shape']): void {
    this.outputs.push({ name, elemType, shape });
  }

  /** A weight or constant tensor, stored as raw little-endian bytes. */
  initializer(name: string, dataType: DataTypeId, dims: number[], rawData: Uint8Array): string {
    this.initializers.push({ name, dataType, dims, rawData });
    return name;
  }

  /** An int64 constant (shapes, axes, indices), shared between uses with the same value. */
  int64(values: number[], scalar = false): string {
    const key = `${scalar ? 's' : 'v'}${values.join(',')}`;
    const known = this.int64Constants.get(key);
    if (known) return known;
    const bytes = new Uint8Array(values.length * 8);
    const view = new DataView(bytes.buffer);
    values.forEach((v, i) => view.setBigInt64(i * 8, BigInt(v), true));
    const name = this.initializer(`const_i64_${this.int64Constants.size}`, DataType.INT64, scalar ? [] : [values.length], bytes);
    this.int64Constants.set(key, name);
    return name;
  }

  /** A float32 constant. */
  float(values: number[] | Float32Array, dims: number[], name = `const_f32_${this.counter++}`): string {
    const data = Float32Array.from(values);
    return this.initializer(name, DataType.FLOAT, dims, new Uint8Array(data.buffer));
  }

  /** Adds one node; returns its output names (fresh unless given). */
  node(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, outputs?: string[] | number): string[] {
    const outNames = Array.isArray(outputs) ? outputs : Array.from({ length: outputs ?? 1 }, () => `${opType}_${this.counter++}`);
    this.nodes.push({ name: `n${this.nodes.length}_${opType}`, opType, input: inputs, output: outNames, attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)) });
    return outNames;
  }

  /** One-output node. */
  op(opType: string, inputs: string[], attrs: Record<string, AttrValue> = {}, output?: string): string {
    return this.node(opType, inputs, attrs, output ? [output] : 1)[0]!;
  }

  build(name: string): GraphMsg {
    return { name, node: this.nodes, initializer: this.initializers, input: this.inputs, output: this.outputs };
  }
}

function attribute(name: string, v: AttrValue): AttributeMsg {
  if (typeof v === 'number') return { name, type: AttributeType.INT, i: v };
  if (Array.isArray(v)) return { name, type: AttributeType.INTS, ints: v };
  if ('float' in v) return { name, type: AttributeType.FLOAT, f: v.float };
  return { name, type: AttributeType.TENSOR, t: v.tensor };
}
