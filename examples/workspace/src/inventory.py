"""Stock levels for a small shop."""


class Inventory:
    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def add(self, item: str, count: int = 1) -> None:
        self.stock[item] = self.stock.get(item, 0) + count

    def remove(self, item: str, count: int = 1) -> None:
        # TODO: refuse to go below zero instead of clamping silently.
        self.stock[item] = max(0, self.stock.get(item, 0) - count)

    def report(self) -> str:
        return "\n".join(f"{item}: {count}" for item, count in sorted(self.stock.items()))
