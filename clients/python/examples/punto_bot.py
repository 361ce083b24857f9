"""A Punto entrant: places its card on a random legal cell (the state, in
``state_of(state)``, shows the card in hand and the table, for a better
bot).

    python examples/punto_bot.py HOST:PORT ENTRANT_KEY
"""

import random
import sys

from punct_client.bot import Bot


class RandomPunto(Bot):
    def choose(self, state, legal_moves, clock):
        return random.choice(legal_moves) if legal_moves else None


if __name__ == "__main__":
    ended = RandomPunto().run(sys.argv[1], sys.argv[2])
    print([(s.name, s.points) for s in ended.standings])
