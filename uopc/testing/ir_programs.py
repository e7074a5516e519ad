"""IR text of programs that tests and benchmarks share."""

from __future__ import annotations


def matmul_text(m: int, k: int, n: int, epilogue: bool = False) -> str:
    """`@main(a: m x k, b: k x n) -> m x n`, a @ b written in uop ops (expand both, multiply,
    reduce); with `epilogue`, `@main` takes a bias c: n too and returns relu(a @ b + c)."""
    a, b, o = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    body = f"""
  %a3 = uop.reshape %a : {a} -> tensor<{m}x1x{k}xf32>
  %ae = uop.expand %a3 : tensor<{m}x1x{k}xf32> -> tensor<{m}x{n}x{k}xf32>
  %bt = uop.permute %b perm [1, 0] : {b} -> tensor<{n}x{k}xf32>
  %b3 = uop.reshape %bt : tensor<{n}x{k}xf32> -> tensor<1x{n}x{k}xf32>
  %be = uop.expand %b3 : tensor<1x{n}x{k}xf32> -> tensor<{m}x{n}x{k}xf32>
  %p = uop.mul %ae, %be : tensor<{m}x{n}x{k}xf32>
  %r = uop.reduce add %p axes [2] : tensor<{m}x{n}x{k}xf32> -> {o}"""
    result = "%r"
    if epilogue:
        body += f"""
  %c1 = uop.reshape %c : tensor<{n}xf32> -> tensor<1x{n}xf32>
  %ce = uop.expand %c1 : tensor<1x{n}xf32> -> {o}
  %s = uop.add %r, %ce : {o}
  %z = uop.const dense<0.0> : {o}
  %y = uop.max %s, %z : {o}"""
        result = "%y"
    extra = f", %c: tensor<{n}xf32>" if epilogue else ""
    return (f"func.func @main(%a: {a}, %b: {b}{extra}) -> {o} {{{body}\n"
            f"  func.return {result} : {o}\n}}\n")
