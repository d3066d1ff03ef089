"""Fine-tunes a small Qwen3 checkpoint (models/demo) on calling-transcripts.ts's token ids until it calls the
tools of OpenEnv's grid_world, maze, connect4 and finqa on its own: a fixture model whose rollouts reach the
real servers, so `webgrpo train --max_steps 1` against them exercises the tool path end to end.

The ids are webgrpo's own SFT tokenization (the prompt a rollout renders, each assistant turn trained, tool
results and template glue only attended), so what is learnt here is what webgrpo's sampler draws. The loss
is the SFT warm-up's: mean NLL per trained token. At the end it samples the first assistant turn of every
env's prompt at temperature 1 (as GRPO samples) and reports how often it is a well-formed call of the tool.

usage: python make-calling-model.py BASE_DIR SFT.jsonl OUT_DIR [--steps N] [--lr LR] [--seed S]
"""
import argparse
import json
import math
import os
import random
import re
import shutil

import torch
from safetensors.torch import save_file
from transformers import PreTrainedTokenizerFast, Qwen3ForCausalLM

COPIED = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"]


def batches(examples, batch_size, rng):
    """Batches of one env each, the envs in turn: every env is trained alike, and an env's episodes are
    about the same length, so little of a batch is padding."""
    by_env = {}
    for e in examples:
        by_env.setdefault(e["env"], []).append(e)
    envs = sorted(by_env)
    for step in range(1 << 62):
        yield [rng.choice(by_env[envs[step % len(envs)]]) for _ in range(batch_size)]


def padded(batch, pad_id):
    """Right-padded: under the causal mask no real token attends to a pad, so no padding mask is needed (and
    attention takes its fused causal kernel instead of materializing a (T, T) mask per sequence)."""
    n = max(len(e["ids"]) for e in batch)
    ids = torch.full((len(batch), n), pad_id, dtype=torch.long)
    trained = torch.zeros((len(batch), n), dtype=torch.float32)
    for i, e in enumerate(batch):
        ids[i, : len(e["ids"])] = torch.tensor(e["ids"])
        trained[i, : len(e["ids"])] = torch.tensor(e["trainMask"], dtype=torch.float32)
    return ids, trained


def sft_loss(model, batch, pad_id):
    """Mean NLL per trained token; token t is predicted from positions < t (position 0 is never scored)."""
    ids, trained = padded(batch, pad_id)
    logits = model(input_ids=ids).logits[:, :-1]
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none")
    mask = trained[:, 1:].reshape(-1)
    return (nll * mask).sum() / mask.sum()


TOOL_CALL = re.compile(r"^<tool_call>\n(.*)\n</tool_call>", re.S)


@torch.no_grad()
def first_turn_calls(model, tokenizer, example, samples, eos_id):
    """How many of `samples` temperature-1 draws from the prompt (as GRPO samples) open with a well-formed
    call of a tool the transcript's first turn calls: Qwen3's <tool_call> block, JSON with that name and
    an arguments object."""
    start = example["trainMask"].index(1)
    name = example["messages"][1]["tool_calls"][0]["function"]["name"]
    prompt = torch.tensor([example["ids"][:start]] * samples)
    out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=64,
                         eos_token_id=eos_id, pad_token_id=eos_id)
    hits = 0
    for row in out[:, start:].tolist():
        m = TOOL_CALL.match(tokenizer.decode(row))
        try:
            call = json.loads(m.group(1)) if m else None
        except json.JSONDecodeError:
            call = None
        hits += bool(call and call.get("name") == name and isinstance(call.get("arguments"), dict))
    return hits


def main():
    p = argparse.ArgumentParser()
    p.add_argument("base")
    p.add_argument("sft")
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=36)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    with open(a.sft) as f:
        examples = [json.loads(line) for line in f if line.strip()]
    model = Qwen3ForCausalLM.from_pretrained(a.base, dtype=torch.float32)
    config = json.load(open(os.path.join(a.base, "config.json")))
    pad_id = config["eos_token_id"]
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    # Cosine decay to a tenth: the high rate learns the calls fast, the tail settles them.
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * s / a.steps)))
    model.train()
    for step, batch in zip(range(a.steps), batches(examples, a.batch_size, rng)):
        loss = sft_loss(model, batch, pad_id)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 25 == 0 or step == a.steps - 1:
            print(json.dumps({"step": step + 1, "loss": round(loss.item(), 4), "lr": sched.get_last_lr()[0]}), flush=True)
    model.eval()
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=os.path.join(a.base, "tokenizer.json"))
    report = {}
    for env in sorted({e["env"] for e in examples}):
        first = next(e for e in examples if e["env"] == env)
        with torch.no_grad():
            loss = sft_loss(model, [e for e in examples if e["env"] == env][:8], pad_id).item()
        report[env] = {"sft_loss": round(loss, 4), "first_turn_calls": f"{first_turn_calls(model, tokenizer, first, 32, pad_id)}/32"}
    print(json.dumps(report), flush=True)

    os.makedirs(a.out, exist_ok=True)
    for name in COPIED:
        shutil.copy(os.path.join(a.base, name), os.path.join(a.out, name))
    # The checkpoint's own tensor names (tied embeddings: no lm_head.weight), as the base stores them.
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    save_file(state, os.path.join(a.out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(a.out, "recipe.json"), "w") as f:
        json.dump({"made_by": "scripts/openenv-capture/make-calling-model.sh", "base": a.base, "steps": a.steps, "lr": a.lr,
                   "batch_size": a.batch_size, "seed": a.seed, "examples": len(examples), "measured": report}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
