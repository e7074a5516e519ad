"""`python -m uopc.pytorch`: the README's coverage lists of the PyTorch door, generated
from the ATen table (`uopc.pytorch.aten.coverage`)."""

from uopc.pytorch.aten import coverage


def main() -> None:
    lists = coverage()
    for what, ops in lists.items():
        names = ", ".join(f"`{op.removeprefix('aten.')}`" for op in ops)
        print(f"- **{what}** ({len(ops)}): {names}\n")


if __name__ == "__main__":
    main()
