// A PÜNCT entrant: places a piece whenever it can (a random placement),
// otherwise moves one at random. Usage: node examples/punct_bot.js HOST:PORT ENTRANT_KEY
import { Bot } from '../src/bot.js';

class Placer extends Bot {
  choose(state, legalMoves) {
    const placements = legalMoves.filter((m) => m.includes('@'));
    const pool = placements.length ? placements : legalMoves;
    return pool.length ? pool[Math.floor(Math.random() * pool.length)] : null;
  }
}

const [server, key] = process.argv.slice(2);
const ended = await new Placer().run(server, key);
console.log(JSON.stringify(ended.standings.map((s) => [s.name, s.points])));
