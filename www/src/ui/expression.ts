// Derived series: a small arithmetic expression over a stream's columns
// (`a / b`, `100 * a / b`, `rate(a) / rate(b)`), typed by a person and
// kept in the page's address. It is parsed here by a recursive-descent
// parser into a tree and evaluated row by row over decoded columns: no
// `eval`, no `Function`, nothing from the text ever runs as code.
//
// Grammar (the usual precedence, left to right):
//   sum     := product (("+" | "-") product)*
//   product := unary (("*" | "/") unary)*
//   unary   := "-" unary | primary
//   primary := number | column | "rate" "(" column ")" | "(" sum ")"
//   column  := name | '"' quoted name '"'      (\" and \\ inside quotes)
// A name is a letter or "_" followed by letters, digits, "_" or ".";
// any other column name is written in double quotes.
//
// A row where any input is missing, or where the result is not a finite
// number (a division by zero), is a gap: NaN, drawn as a hole.

/** Longest expression accepted, and deepest nesting: a bound on the work a typed (or linked) text can ask for. */
export const MAX_EXPR_CHARS = 400;
const MAX_DEPTH = 40;
/** Derived series plotted at once, at most (each reads its window's rows). */
export const MAX_DERIVED = 4;

export type Expr =
  | { kind: "num"; value: number }
  | { kind: "col"; name: string; rate: boolean; at: number }
  | { kind: "neg"; arg: Expr }
  | { kind: "bin"; op: "+" | "-" | "*" | "/"; left: Expr; right: Expr };

/** A parse failure: where (0-based character index) and why, in words. */
export class ExprError extends Error {
  constructor(
    readonly at: number,
    readonly why: string,
  ) {
    super(`at character ${at + 1}: ${why}`);
    this.name = "ExprError";
  }
}

type Token =
  | { t: "num"; value: number; at: number; text: string }
  | { t: "name"; name: string; quoted: boolean; at: number; text: string }
  | { t: "op"; op: string; at: number; text: string }
  | { t: "end"; at: number; text: string };

function describeToken(tok: Token): string {
  return tok.t === "end" ? "the end of the expression" : `"${tok.text}"`;
}

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      i++;
      continue;
    }
    if ((c >= "0" && c <= "9") || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i))!;
      const value = Number(m[0]);
      if (!Number.isFinite(value)) throw new ExprError(i, `the number ${m[0]} is too large`);
      out.push({ t: "num", value, at: i, text: m[0] });
      i += m[0].length;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(src.slice(i))!;
      out.push({ t: "name", name: m[0], quoted: false, at: i, text: m[0] });
      i += m[0].length;
      continue;
    }
    if (c === '"') {
      let name = "";
      let j = i + 1;
      for (;;) {
        const d = src[j];
        if (d === undefined) throw new ExprError(i, "this quoted column name is never closed (a \" is missing)");
        if (d === '"') break;
        if (d === "\\" && (src[j + 1] === '"' || src[j + 1] === "\\")) {
          name += src[j + 1];
          j += 2;
          continue;
        }
        name += d;
        j++;
      }
      out.push({ t: "name", name, quoted: true, at: i, text: src.slice(i, j + 1) });
      i = j + 1;
      continue;
    }
    if ("+-*/()".includes(c)) {
      out.push({ t: "op", op: c, at: i, text: c });
      i++;
      continue;
    }
    throw new ExprError(i, `"${c}" is not part of an expression (use + - * /, parentheses, numbers, column names and rate(column))`);
  }
  out.push({ t: "end", at: src.length, text: "" });
  return out;
}

/**
 * Parses `src` against the stream's column names. Throws ExprError for a
 * syntax error or an unknown column, naming the place.
 */
export function parseExpr(src: string, columns: readonly string[]): Expr {
  if (src.length > MAX_EXPR_CHARS) throw new ExprError(MAX_EXPR_CHARS, `an expression is at most ${MAX_EXPR_CHARS} characters`);
  const toks = tokenize(src);
  if (toks.length === 1) throw new ExprError(0, "the expression is empty");
  const known = new Set(columns);
  let k = 0;
  const peek = () => toks[k]!;
  const isOp = (op: string) => {
    const t = peek();
    return t.t === "op" && t.op === op;
  };
  const column = (): Expr => {
    const t = peek();
    if (t.t !== "name") throw new ExprError(t.at, `expected a column name but found ${describeToken(t)}`);
    k++;
    if (!known.has(t.name)) throw new ExprError(t.at, `there is no column named "${t.name}" in this stream`);
    return { kind: "col", name: t.name, rate: false, at: t.at };
  };
  const primary = (depth: number): Expr => {
    if (depth > MAX_DEPTH) throw new ExprError(peek().at, `nested more than ${MAX_DEPTH} deep`);
    const t = peek();
    if (t.t === "num") {
      k++;
      return { kind: "num", value: t.value };
    }
    if (t.t === "name") {
      const next = toks[k + 1]!;
      if (!t.quoted && next.t === "op" && next.op === "(") {
        if (t.name !== "rate") throw new ExprError(t.at, `"${t.name}" is not a function (the one function is rate)`);
        k += 2;
        const col = column();
        if (!isOp(")")) throw new ExprError(peek().at, `rate() takes one column name; expected ")" but found ${describeToken(peek())}`);
        k++;
        return { ...col, rate: true } as Expr;
      }
      return column();
    }
    if (t.t === "op" && t.op === "(") {
      k++;
      const inner = sum(depth + 1);
      if (!isOp(")")) throw new ExprError(peek().at, `expected ")" to close the "(" at character ${t.at + 1} but found ${describeToken(peek())}`);
      k++;
      return inner;
    }
    throw new ExprError(t.at, `expected a number, a column name or "(" but found ${describeToken(t)}`);
  };
  const unary = (depth: number): Expr => {
    if (isOp("-")) {
      if (depth > MAX_DEPTH) throw new ExprError(peek().at, `nested more than ${MAX_DEPTH} deep`);
      k++;
      return { kind: "neg", arg: unary(depth + 1) };
    }
    return primary(depth);
  };
  const product = (depth: number): Expr => {
    let left = unary(depth);
    while (isOp("*") || isOp("/")) {
      const op = (peek() as { op: "*" | "/" }).op;
      k++;
      left = { kind: "bin", op, left, right: unary(depth) };
    }
    return left;
  };
  const sum = (depth: number): Expr => {
    let left = product(depth);
    while (isOp("+") || isOp("-")) {
      const op = (peek() as { op: "+" | "-" }).op;
      k++;
      left = { kind: "bin", op, left, right: product(depth) };
    }
    return left;
  };
  const tree = sum(0);
  const rest = peek();
  if (rest.t !== "end") {
    throw new ExprError(rest.at, rest.t === "op" && rest.op === ")" ? `this ")" closes nothing` : `expected an operator (+ - * /) but found ${describeToken(rest)}`);
  }
  return tree;
}

/** The inputs an expression reads: `name` for a column as stored, `rate:name` for its per-second rate. */
export function inputsOf(e: Expr, out = new Set<string>()): Set<string> {
  switch (e.kind) {
    case "col":
      out.add(inputKey(e.name, e.rate));
      break;
    case "neg":
      inputsOf(e.arg, out);
      break;
    case "bin":
      inputsOf(e.left, out);
      inputsOf(e.right, out);
      break;
  }
  return out;
}

export function inputKey(name: string, rate: boolean): string {
  return rate ? `rate:${name}` : name;
}

/**
 * Evaluates `e` on `n` rows: `inputs` maps each key of `inputsOf(e)` to
 * that input's value per row, NaN where the row has none. A row whose
 * result is not finite (missing input, division by zero, overflow) is NaN.
 */
export function evaluate(e: Expr, inputs: ReadonlyMap<string, Float64Array>, n: number): Float64Array {
  const out = new Float64Array(n);
  const walk = (x: Expr, i: number): number => {
    switch (x.kind) {
      case "num":
        return x.value;
      case "col": {
        const v = inputs.get(inputKey(x.name, x.rate));
        if (!v) throw new Error(`no values given for ${inputKey(x.name, x.rate)}`);
        return v[i] ?? NaN;
      }
      case "neg":
        return -walk(x.arg, i);
      case "bin": {
        const a = walk(x.left, i);
        const b = walk(x.right, i);
        switch (x.op) {
          case "+":
            return a + b;
          case "-":
            return a - b;
          case "*":
            return a * b;
          case "/":
            return b === 0 ? NaN : a / b;
        }
      }
    }
  };
  for (let i = 0; i < n; i++) {
    const v = walk(e, i);
    out[i] = Number.isFinite(v) ? v : NaN;
  }
  return out;
}
