// A Punto entrant: places its card on the legal cell nearest the table's
// centre (notation `x,y`, the first card at 0,0). Usage: node examples/punto_bot.js HOST:PORT ENTRANT_KEY
import { Bot } from '../src/bot.js';

class Central extends Bot {
  choose(state, legalMoves) {
    if (legalMoves.length === 0) return null;
    const distance = (m) => m.split(',').map(Number).reduce((a, v) => a + Math.abs(v), 0);
    return legalMoves.reduce((best, m) => (distance(m) < distance(best) ? m : best));
  }
}

const [server, key] = process.argv.slice(2);
const ended = await new Central().run(server, key);
console.log(JSON.stringify(ended.standings.map((s) => [s.name, s.points])));
