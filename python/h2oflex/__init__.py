"""h2oflex from Python: offline batch generation and KV-eviction quality on the h2oflex engine.

    import h2oflex
    llm = h2oflex.LLM("path/to/model", kv={"policy": "h2o", "heavy_ratio": 0.1, "recent_ratio": 0.1})
    for out in llm.generate(["The capital of France is"], max_new_tokens=8):
        print(out.text, out.finish_reason)

The keyword arguments of LLM are the keys of a run configuration (README "A run configuration"),
checked with the same messages as the YAML; a request's fields are those of a `generate` input
line. Bad input raises ValueError, I/O failures OSError.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from . import _h2oflex

__all__ = ["LLM", "RequestOutput", "GenerationStats", "run_experiment", "plan"]

Prompt = Union[str, Sequence[int], Sequence[Mapping[str, Any]]]


@dataclass
class GenerationStats:
    """What one generate call did."""

    requests: int
    blocks_run: int
    block_size: int
    completion_tokens: int
    generate_s: float
    tokens_per_s: float
    prompt_tokens: int
    padded_prompt_tokens: int
    kv: str  # the KV policy, e.g. "h2o:0.1,0.1"
    # Bytes this call moved between tiers, e.g. {"disk->device": N} (the pipeline's; empty in
    # memory), and the fraction of a full cache's KV the policy kept (1.0: full).
    bytes_moved: dict[str, int]
    kv_kept: float
    engine: str  # where it ran: "in memory, batch 16 on cpu, compute bf16", or the pipeline's policy
    interrupted: bool


@dataclass
class RequestOutput:
    """One request's result (its fields as a `generate` result line has them)."""

    id: str
    text: str
    token_ids: list[int]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" (EOS or a stop string) or "length"
    prompt_dropped_bytes: int = 0  # bytes of the prompt the vocabulary has no token for
    stats: Optional[GenerationStats] = field(default=None, repr=False)


def _config_json(model: Union[str, os.PathLike, None], keys: Mapping[str, Any]) -> str:
    config = {k: v for k, v in keys.items() if v is not None}
    if model is not None:
        config["model"] = os.fspath(model)
    return json.dumps(config)


def _progress_callback(progress: Union[bool, Callable[[int, int, int], None], None], total: int):
    if callable(progress):
        return progress
    if not progress:
        return None
    try:
        from tqdm import tqdm  # optional
    except ImportError:
        return None
    bar = tqdm(total=total, unit="req")

    def advance(done: int, _total: int, _tokens: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return advance


class LLM:
    """A model on the h2oflex engine, loaded once for many generate / eval calls.

    `model` is a model directory (its weights; `dummy=True` for random ones) or a published name
    with `dummy=True`. Every other keyword is a run-config key: `kv` (the KV policy: dict),
    `policy` (placement on GPU / CPU / disk: dict), `hardware`, `compute_dtype` ("auto", "f32",
    "bf16", "f16"), `batch_size`, `gen_len` (the default max_new_tokens), `temperature`, `top_p`,
    `seed`, `stop_at_eos`. `config` may give them as a dict or a YAML file's path instead.
    """

    def __init__(self, model: Union[str, os.PathLike, None] = None, *,
                 config: Union[Mapping[str, Any], str, os.PathLike, None] = None, **keys: Any):
        merged: dict[str, Any] = {}
        path = ""
        if isinstance(config, (str, os.PathLike)):
            path = os.fspath(config)  # read by the engine; the keywords replace its keys
        elif config is not None:
            merged.update(config)
        merged.update(keys)
        self._session = _h2oflex.Session(_config_json(model, merged), path, "h2oflex.LLM(...)")

    def __repr__(self) -> str:
        return f"h2oflex.LLM({self._session.describe()})"

    def generate(self, prompts: Union[Prompt, Iterable[Prompt]], *,
                 max_new_tokens: Optional[int] = None, temperature: Optional[float] = None,
                 top_p: Optional[float] = None, stop: Union[str, Sequence[str], None] = None,
                 seed: Optional[int] = None, ids: Optional[Sequence[str]] = None,
                 group_by_length: bool = True,
                 progress: Union[bool, Callable[[int, int, int], None], None] = None
                 ) -> list[RequestOutput]:
        """Generates for every prompt: a string, a list of token ids, or a chat (a list of
        {"role", "content"} messages, rendered with the model's chat template). Returns one
        RequestOutput per prompt, in order. Requests are keyed by `ids` (default "0", "1", ...),
        which also name their sampling streams, as `generate` keys its input lines."""
        if isinstance(prompts, str) or _is_token_list(prompts) or _is_chat(prompts):
            prompts = [prompts]
        prompts = list(prompts)
        ids = [str(i) for i in range(len(prompts))] if ids is None else [str(i) for i in ids]
        if len(ids) != len(prompts):
            raise ValueError(f"ids: {len(ids)} ids for {len(prompts)} prompts")
        lines = []
        for i, p in enumerate(prompts):
            line: dict[str, Any] = {"id": ids[i]}
            if isinstance(p, str):
                line["prompt"] = p
            elif _is_chat(p):
                line["messages"] = list(p)
            elif _is_token_list(p):
                line["prompt"] = list(p)  # OpenAI's token-array prompt
            else:
                raise ValueError(f"prompt {i}: expected a string, a list of token ids or a list "
                                 f"of chat messages, got {type(p).__name__}")
            for key, value in (("max_new_tokens", max_new_tokens), ("temperature", temperature),
                               ("top_p", top_p), ("seed", seed)):
                if value is not None:
                    line[key] = value
            if stop is not None:
                line["stop"] = [stop] if isinstance(stop, str) else list(stop)
            lines.append(json.dumps(line))
        run = self._session.generate(lines, group_by_length,
                                     _progress_callback(progress, len(lines)))
        stats = GenerationStats(**run["stats"])
        return [RequestOutput(stats=stats, **r) for r in run["results"]]

    def eval_perplexity(self, text: str, *, window: Optional[int] = None,
                        stride: Optional[int] = None, context: str = "stream") -> dict[str, Any]:
        """Perplexity of `text` under this LLM's KV policy, as `h2oflex eval perplexity` scores it
        (windows of `window` tokens every `stride`; `context` "stream" or "prefill")."""
        return self._session.eval_perplexity(text, window, stride, context)


def _is_token_list(p: Any) -> bool:
    return isinstance(p, (list, tuple)) and len(p) > 0 and all(isinstance(t, int) for t in p)


def _is_chat(p: Any) -> bool:
    return isinstance(p, (list, tuple)) and len(p) > 0 and all(isinstance(m, Mapping) for m in p)


def run_experiment(config: Union[Mapping[str, Any], str, os.PathLike]) -> dict[str, Any]:
    """`h2oflex run`: a config dict (one configuration) or a YAML file's path (all its
    variants); returns the result document `run --json` writes."""
    if isinstance(config, (str, os.PathLike)):
        return _h2oflex.run_experiment("", os.fspath(config), False)
    return _h2oflex.run_experiment(json.dumps(dict(config)), "", False)


def plan(config: Union[Mapping[str, Any], str, os.PathLike]) -> dict[str, Any]:
    """`h2oflex run --plan-only`: the memory plan of a config with a `policy:` section, checked
    against its hardware budgets, and the cost model's prediction; nothing is loaded or run."""
    if isinstance(config, (str, os.PathLike)):
        return _h2oflex.run_experiment("", os.fspath(config), True)
    return _h2oflex.run_experiment(json.dumps(dict(config)), "", True)
