// A Punto entrant: places its card on a random legal cell (the state, in
// stateOf(state), shows the card in hand and the table, for a better bot).
// Usage: node examples/punto_bot.js HOST:PORT ENTRANT_KEY
import { Bot } from '../src/bot.js';

class RandomPunto extends Bot {
  choose(state, legalMoves) {
    return legalMoves.length ? legalMoves[Math.floor(Math.random() * legalMoves.length)] : null;
  }
}

const [server, key] = process.argv.slice(2);
const ended = await new RandomPunto().run(server, key);
console.log(JSON.stringify(ended.standings.map((s) => [s.name, s.points])));
