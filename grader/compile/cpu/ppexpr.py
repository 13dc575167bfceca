"""The value of a C preprocessor `#if` expression made of integer constants, without Python's eval.

    value(" 0 >= 800 || (1 << 4) > 3 ")   # 1
    value("0 >= 800 && MY_MACRO")          # None: a name this module cannot know

What g++ and nvcc evaluate (C11 6.10.1): integer literals (decimal, octal, hex, binary, u/l suffixes,
digit separators), true/false, the unary + - ~ !, the binary * / % + - << >> < > <= >= == != & ^ | && ||
and ?:, in intmax_t, or uintmax_t when either operand is unsigned (64 bits), + - * wrapping as GCC's
do; && || ?: skip their unevaluated operand. What it refuses (Unsupported, with why): a shift by a
negative count or by 64 or more (GCC gives 0 with a warning), a literal over 64 bits, an expression
over MAX_TOKENS tokens or nested deeper than MAX_DEPTH. Division by zero is Invalid (GCC: an error).
Every step is bounded: time linear in the text, no value past 64 bits.
"""

from __future__ import annotations

import re

MAX_TOKENS = 256  # an #if line is a few dozen tokens
MAX_DEPTH = 64  # parentheses and unary operators, nested
_BITS = 64
_MASK = (1 << _BITS) - 1
_INTMAX = (1 << (_BITS - 1)) - 1

_TOKEN = re.compile(
    r"\s*(?:(?P<num>[0-9][0-9A-Za-z_']*)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><<|>>|<=|>=|==|!=|&&|\|\||[-+~!*/%<>&^|?:()]))"
)
_BINARY = {  # precedence, higher binds tighter
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}


class Unsupported(Exception):
    """The expression is valid C, but outside what this evaluator admits (the message says why)."""


class Invalid(Exception):
    """The preprocessor rejects the expression too (division by zero)."""


class _Unknown(Exception):
    """A name (a macro of the file, `defined X`) or a token this evaluator does not know."""


def value(expr: str) -> int | None:
    """The expression's value (an int; in #if, non-zero is true), or None when it holds a name or a
    token other than those above. Raises Unsupported or Invalid (see the module's doc)."""
    try:
        tokens = _tokens(expr)
        parser = _Parser(tokens)
        tree = parser.conditional()
        if parser.i != len(tokens):
            raise _Unknown()
        return _eval(tree, True)[0]
    except _Unknown:
        return None


def _tokens(expr: str) -> list[tuple[str, object]]:
    out, pos, n = [], 0, len(expr)
    while pos < n:
        m = _TOKEN.match(expr, pos)
        if not m:
            if expr[pos:].strip():
                raise _Unknown()
            break
        pos = m.end()
        if m.group("num"):
            out.append(("num", _literal(m.group("num"))))
        elif m.group("name"):
            word = m.group("name")
            if word not in ("true", "false"):
                raise _Unknown()
            out.append(("num", (int(word == "true"), False)))
        else:
            out.append(("op", m.group("op")))
        if len(out) > MAX_TOKENS:
            raise Unsupported(f"an #if expression of more than {MAX_TOKENS} tokens")
    return out


def _literal(text: str) -> tuple[int, bool]:
    """(value, unsigned) of an integer literal."""
    body = text.replace("'", "")
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)([uU]?(?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU])", body)
    if not m:
        raise _Unknown()  # a float, a user-defined literal...
    digits, suffix = m.groups()
    if len(digits) > 70:  # past any 64-bit literal: never hand int() a long string
        raise Unsupported(f"the integer literal {text[:20]}... has more than 64 bits")
    base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else 8 if digits[0] == "0" else 10
    v = int(digits[2:] if base in (16, 2) else digits, base)
    if v > _MASK:
        raise Unsupported(f"the integer literal {text} has more than 64 bits")
    return v, "u" in suffix.lower() or v > _INTMAX


class _Parser:
    """Recursive descent to a tree of tuples: ("num", (v, unsigned)), (op, a[, b[, c]])."""

    def __init__(self, tokens):
        self.t, self.i, self.depth = tokens, 0, 0

    def peek(self):
        return self.t[self.i][1] if self.i < len(self.t) and self.t[self.i][0] == "op" else None

    def take(self, op: str):
        if self.peek() != op:
            raise _Unknown()
        self.i += 1

    def nest(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported(f"an #if expression nested more than {MAX_DEPTH} deep")

    def conditional(self):
        cond = self.binary(1)
        if self.peek() != "?":
            return cond
        self.i += 1
        self.nest()
        yes = self.conditional()
        self.take(":")
        no = self.conditional()
        self.depth -= 1
        return ("?", cond, yes, no)

    def binary(self, min_prec: int):
        left = self.unary()
        while (op := self.peek()) in _BINARY and _BINARY[op] >= min_prec:
            self.i += 1
            left = (op, left, self.binary(_BINARY[op] + 1))
        return left

    def unary(self):
        if self.i >= len(self.t):
            raise _Unknown()
        kind, tok = self.t[self.i]
        self.i += 1
        if kind == "num":
            return ("num", tok)
        if tok in ("+", "-", "~", "!"):
            self.nest()
            tree = ("u" + tok, self.unary())
            self.depth -= 1
            return tree
        if tok == "(":
            self.nest()
            tree = self.conditional()
            self.take(")")
            self.depth -= 1
            return tree
        raise _Unknown()


def _wrap(v: int, unsigned: bool) -> tuple[int, bool]:
    v &= _MASK
    return (v if unsigned or v <= _INTMAX else v - (1 << _BITS)), unsigned


def _eval(tree, live: bool) -> tuple[int, bool]:
    """(value, unsigned). `live`: the operand is evaluated (errors count); && || ?: pass False to the
    operand they skip, whose type still counts, as in C."""
    op = tree[0]
    if op == "num":
        return tree[1]
    if op[0] == "u":
        v, u = _eval(tree[1], live)
        if op == "u!":
            return int(v == 0), False
        return _wrap({"u+": v, "u-": -v, "u~": ~v}[op], u)
    if op == "?":
        c, _ = _eval(tree[1], live)
        (a, ua), (b, ub) = _eval(tree[2], live and c != 0), _eval(tree[3], live and c == 0)
        return _wrap(a if c else b, ua or ub)
    a, ua = _eval(tree[1], live)
    if op in ("&&", "||"):
        b, _ = _eval(tree[2], live and (a != 0) == (op == "&&"))
        return int(a != 0 and b != 0 if op == "&&" else a != 0 or b != 0), False
    b, ub = _eval(tree[2], live)
    if op in ("<<", ">>"):  # the left operand's type
        if b < 0 or b >= _BITS:
            if not live:
                return 0, ua
            raise Unsupported(f"a shift by {b} bits in an #if expression (only 0 to {_BITS - 1} are evaluated here)")
        a = a & _MASK if ua else a
        return _wrap(a << b if op == "<<" else a >> b, ua)
    u = ua or ub
    if u:  # the usual arithmetic conversions: both unsigned
        a, b = a & _MASK, b & _MASK
    if op in ("/", "%"):
        if b == 0:
            if not live:
                return 0, u
            raise Invalid("division by zero in #if")
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # C truncates toward zero
        return _wrap(q if op == "/" else a - q * b, u)
    if op in ("<", ">", "<=", ">=", "==", "!="):
        return int({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b, "==": a == b, "!=": a != b}[op]), False
    return _wrap({"+": a + b, "-": a - b, "*": a * b, "&": a & b, "^": a ^ b, "|": a | b}[op], u)
