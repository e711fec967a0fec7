"""circuit.outputs: which signals decide which token (the output head).

Rules, each enabled by an optional condition (a bit, or a one-hot member):
- `output_value(bits, tokens, when)`: token tokens[v] where the bits spell v;
- `output_member(onehot, tokens, when)`: token tokens[m] where member m is hot;
- `output_token(token, when)`: one fixed token;
- `default_token(token)`: when no rule is enabled.
A token belongs to at most one rule (mux values first when two rules would share tokens).

Logits are exact small integers (every norm is the identity): for a rule r whose best
score is B_r (n for n bits, 2 for a one-hot, 0 for a fixed token) and N = max B_r,
logit(token) = score + (N - B_r) + W * enabled (W = 5), default = N + 2. With exactly one
rule enabled its token beats every other token of the rule by >= 2, the default by 3 and
every disabled rule's tokens by >= 5; with none enabled the default wins by >= 2. The
margin report measures the gap actually seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgpu.circuit.ir import BITS, ONEHOT, Circuit, Ref, Source, _ref_id, as_ref
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.primitives import CircuitError

ENABLE_WEIGHT = 5.0
DEFAULT_LEAD = 2.0


@dataclass(eq=False)
class Rule:
    kind: str  # "value", "member", "token"
    tokens: list[int]
    source: Ref | None
    when: Ref | None

    @property
    def best(self) -> float:
        return {"value": float(len(self.source or ())), "member": 2.0, "token": 0.0}[self.kind]

    def inputs(self) -> list[Ref]:
        return [r for r in (self.source, self.when) if r is not None]

    def describe(self) -> dict:
        return {"kind": self.kind, "tokens": list(self.tokens), "source": _ref_id(self.source),
                "when": _ref_id(self.when)}

    def score(self, index: int, dims) -> dict[int, float]:
        """The score form of tokens[index] over residual dims."""
        if self.kind == "value":
            return {d: (1.0 if index >> i & 1 else -1.0) for i, d in enumerate(dims(self.source))}
        if self.kind == "member":
            return {dims(self.source)[index]: 2.0}
        return {}


def _condition(when: Source | None) -> Ref | None:
    if when is None:
        return None
    ref = as_ref(when)
    if len(ref) != 1 or ref.kind not in (BITS, ONEHOT):
        raise CircuitError(f"output condition {ref.describe()} is not a bit or a member")
    return ref


def _add_rule(c: Circuit, rule: Rule) -> None:
    taken = {t for r in c.rules for t in r.tokens}
    if c.default_token is not None:
        taken.add(c.default_token)
    for t in rule.tokens:
        if not 0 <= t < c.vocab_size:
            raise CircuitError(f"output token {t} is outside the vocabulary")
        if t in taken:
            raise CircuitError(f"token {t} is already the output of another rule")
    if len(set(rule.tokens)) != len(rule.tokens):
        raise CircuitError("an output rule lists a token twice")
    c.rules.append(rule)


def output_value(c: Circuit, bits: Source, tokens: Sequence[int],
                 when: Source | None = None) -> None:
    bits = as_ref(bits)
    if bits.kind != BITS:
        raise CircuitError(f"output value {bits.describe()} is not bits")
    if len(tokens) > 2 ** len(bits):
        raise CircuitError(f"{len(tokens)} tokens for {len(bits)} bits")
    _add_rule(c, Rule("value", list(tokens), bits, _condition(when)))


def output_member(c: Circuit, onehot: Source, tokens: Sequence[int],
                  when: Source | None = None) -> None:
    ref = as_ref(onehot)
    if ref.kind != ONEHOT or len(tokens) > len(ref):
        raise CircuitError(f"output member rule: {ref.describe()} is not a one-hot of "
                           f">= {len(tokens)} members")
    _add_rule(c, Rule("member", list(tokens), ref, _condition(when)))


def output_token(c: Circuit, token: int, when: Source | None = None) -> None:
    _add_rule(c, Rule("token", [token], None, _condition(when)))


def default_token(c: Circuit, token: int) -> None:
    if c.default_token is not None:
        raise CircuitError("the circuit already has a default token")
    if any(token in r.tokens for r in c.rules):
        raise CircuitError(f"token {token} is already the output of a rule")
    c.default_token = token


def output_head(c: Circuit, hidden: int, dims, one: int) -> SparseTensor:
    """The lm_head matrix [vocab, hidden] of the rules, built sparse (np.asarray(head)
    gives it dense)."""
    head = SparseTensor.zeros((c.vocab_size, hidden))
    top = max([r.best for r in c.rules], default=0.0)
    for rule in c.rules:
        for index, token in enumerate(rule.tokens):
            row = rule.score(index, dims)
            row[one] = row.get(one, 0.0) + top - rule.best
            if rule.when is None:
                row[one] += ENABLE_WEIGHT
            else:
                (d,) = dims(rule.when)
                if rule.when.kind == BITS:  # W * (x + 1) / 2
                    row[d] = row.get(d, 0.0) + ENABLE_WEIGHT / 2
                    row[one] += ENABLE_WEIGHT / 2
                else:
                    row[d] = row.get(d, 0.0) + ENABLE_WEIGHT
            for d, k in row.items():
                head[token, d] += k
    if c.default_token is not None:
        head[c.default_token, one] = top + DEFAULT_LEAD
    return head
