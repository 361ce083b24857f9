"""A Dots entrant: plays the legal cell nearest the field's centre (ties:
the first in notation order).

    python examples/dots_bot.py HOST:PORT ENTRANT_KEY
"""

import sys

from punct_client import state_of
from punct_client.bot import Bot


class CentreDots(Bot):
    def choose(self, state, legal_moves, clock):
        field = state_of(state)
        cx, cy = ((field.rules.width or 39) + 1) / 2, ((field.rules.height or 32) + 1) / 2
        cells = [m for m in legal_moves if m.replace(",", "").isdigit()]
        if not cells:
            return legal_moves[0] if legal_moves else None

        def distance(m):
            x, y = map(int, m.split(","))
            return abs(x - cx) + abs(y - cy)

        return min(cells, key=distance)


if __name__ == "__main__":
    ended = CentreDots().run(sys.argv[1], sys.argv[2])
    print([(s.name, s.points) for s in ended.standings])
