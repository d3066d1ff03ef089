"""Qwen3 forward transcribed independently in numpy, following the structure of transformers'
modeling_qwen3.py (repeat_kv, rotate_half, q_norm/k_norm before RoPE), to pin the TypeScript
reference's forward. Reads the case written by dump-golden-case.ts, prints logits as JSON."""
import json
import sys

import numpy as np

case = json.load(open(sys.argv[1]))
c = case["cfg"]
D, F, H, K, hd = c["hiddenSize"], c["intermediateSize"], c["numHeads"], c["numKvHeads"], c["headDim"]
V, L, eps = c["vocabSize"], c["numLayers"], c["rmsNormEps"]


def weight(name, shape):
    return np.array(case["w"][name]).reshape(shape)


def forward(lora):
    def linear(x, name, out_f, in_f):
        y = x @ weight(name, (out_f, in_f)).T
        if lora and name in lora["A"]:
            a = np.array(lora["A"][name]).reshape(lora["r"], in_f)
            b = np.array(lora["B"][name]).reshape(out_f, lora["r"])
            y = y + (lora["alpha"] / lora["r"]) * (x @ a.T @ b.T)
        return y

    def rmsnorm(x, w):
        return w * (x / np.sqrt((x**2).mean(-1, keepdims=True) + eps))

    def rotate_half(v):
        return np.concatenate([-v[..., hd // 2 :], v[..., : hd // 2]], -1)

    ids = case["ids"]
    T = len(ids)
    x = weight("model.embed_tokens.weight", (V, D))[ids]
    inv_freq = 1.0 / (c["ropeTheta"] ** (np.arange(0, hd, 2) / hd))
    angles = np.outer(np.arange(T), inv_freq)
    emb = np.concatenate([angles, angles], -1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
    for layer in range(L):
        p = f"model.layers.{layer}"
        a = rmsnorm(x, weight(f"{p}.input_layernorm.weight", (D,)))
        q = linear(a, f"{p}.self_attn.q_proj.weight", H * hd, D).reshape(T, H, hd)
        k = linear(a, f"{p}.self_attn.k_proj.weight", K * hd, D).reshape(T, K, hd)
        v = linear(a, f"{p}.self_attn.v_proj.weight", K * hd, D).reshape(T, K, hd)
        q = rmsnorm(q, weight(f"{p}.self_attn.q_norm.weight", (hd,)))
        k = rmsnorm(k, weight(f"{p}.self_attn.k_norm.weight", (hd,)))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, H // K, axis=1)  # repeat_kv: kv0, kv0, kv1, kv1, ...
        v = np.repeat(v, H // K, axis=1)
        scores = np.einsum("thd,shd->hts", q, k) * hd**-0.5 + np.triu(np.full((T, T), -np.inf), 1)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        attn = np.einsum("hts,shd->thd", probs, v).reshape(T, H * hd)
        x = x + linear(attn, f"{p}.self_attn.o_proj.weight", D, H * hd)
        b = rmsnorm(x, weight(f"{p}.post_attention_layernorm.weight", (D,)))
        gate = linear(b, f"{p}.mlp.gate_proj.weight", F, D)
        up = linear(b, f"{p}.mlp.up_proj.weight", F, D)
        x = x + linear(gate / (1 + np.exp(-gate)) * up, f"{p}.mlp.down_proj.weight", D, F)
    head = "model.embed_tokens.weight" if c["tieWordEmbeddings"] else "lm_head.weight"
    return rmsnorm(x, weight("model.norm.weight", (D,))) @ weight(head, (V, D)).T


json.dump({"logits": forward(None).tolist(), "logitsLora": forward(case["lora"]).tolist()}, sys.stdout)
