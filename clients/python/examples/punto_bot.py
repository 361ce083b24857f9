"""A Punto entrant: places its card on the legal cell nearest the table's
centre (notation ``x,y``, the first card at 0,0).

    python examples/punto_bot.py HOST:PORT ENTRANT_KEY
"""

import sys

from punct_client.bot import Bot


class Central(Bot):
    def choose(self, state, legal_moves, clock):
        if not legal_moves:
            return None
        return min(legal_moves, key=lambda m: sum(abs(int(v)) for v in m.split(",")))


if __name__ == "__main__":
    ended = Central().run(sys.argv[1], sys.argv[2])
    print([(s.name, s.points) for s in ended.standings])
