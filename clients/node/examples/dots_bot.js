// A Dots entrant: plays the legal cell nearest the field's centre (ties: the
// first in notation order). Usage: node examples/dots_bot.js HOST:PORT ENTRANT_KEY
import { Bot } from '../src/bot.js';
import { stateOf } from '../src/client.js';

class CentreDots extends Bot {
  choose(state, legalMoves) {
    const field = stateOf(state);
    const [cx, cy] = [((field.rules?.width || 39) + 1) / 2, ((field.rules?.height || 32) + 1) / 2];
    const cells = legalMoves.filter((m) => /^\d+,\d+$/.test(m));
    if (cells.length === 0) return legalMoves[0] ?? null;
    const distance = (m) => { const [x, y] = m.split(',').map(Number); return Math.abs(x - cx) + Math.abs(y - cy); };
    return cells.reduce((best, m) => (distance(m) < distance(best) ? m : best));
  }
}

const [server, key] = process.argv.slice(2);
const ended = await new CentreDots().run(server, key);
console.log(JSON.stringify(ended.standings.map((s) => [s.name, s.points])));
