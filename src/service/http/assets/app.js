// The spectator page: the tournaments (polled from /api/tournaments, each with
// live standings and links to its games), a list of games (polled from /api/games) and a game view
// that follows /api/games/{id}/events (Server-Sent Events), with a ply slider
// that shows earlier positions from /games/{id}.svg?ply=N. No framework and no
// build step: this file is served as it is (see docs/SPECTATOR.md).
'use strict';

const LIST_REFRESH_MS = 2000;
const CLOCK_TICK_MS = 250;

const $ = (id) => document.getElementById(id);

const state = {
  filter: { label: '', status: 'all' },
  listTimer: null,
  gameId: null,
  game: null,          // the last /api/games/{id} answer
  received: 0,         // performance.now() when it came (clocks count from it)
  shownPly: 0,         // the ply the board and slider show
  following: true,     // whether new moves move the board along
  events: null,        // the EventSource of the game shown
  boardRequest: 0,     // number of the latest board fetch (older ones are dropped)
  boardUrl: null,      // the object URL the board image shows
  clockTimer: null,
  tournamentId: null,  // the tournament shown
  tournamentTimer: null,
};

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('aria-') || k === 'role' || k === 'scope') node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const c of children) node.append(c);
  return node;
}

function seatName(seat) {
  return seat ? seat[0].toUpperCase() + seat.slice(1) : '';
}

function reasonText(reason) {
  return reason.toLowerCase().replaceAll('_', ' ');
}

function statusText(g) {
  if (g.outcome) {
    const why = reasonText(g.outcome.reason);
    if (g.outcome.draw) return `Draw (${why})`;
    const winners = g.outcome.winners.map(seatName).join(' and ');
    return `${winners} ${g.outcome.winners.length > 1 ? 'win' : 'wins'} (${why})`;
  }
  return `${seatName(g.to_move)} to move`;
}

// The scores of a game that keeps them while it is played (Dots), e.g.
// "Red 3 – Blue 1"; empty for a game without.
function scoresText(g) {
  if (!g.scores || !g.scores.length) return '';
  return g.seats.map((seat, i) => `${seatName(seat)} ${g.scores[i]}`).join(' – ');
}

// What the board looks like before the first move, per game (PÜNCT starts
// empty; Dots usually with start dots).
const START_DESCRIPTION = {
  punct: 'The empty board before the first move.',
  dots: 'The field before the first move, with any start dots.',
  punto: 'The empty table before the first card.',
};

function gameText(g) {
  return g.game === 'punct' ? g.variant : `${g.game} (${g.variant})`;
}

function labelText(labels) {
  return Object.entries(labels).map(([k, v]) => `${k}:${v}`).join(', ');
}

// ---- the list ------------------------------------------------------------

async function refreshList() {
  const params = new URLSearchParams();
  if (state.filter.label) params.append('label', state.filter.label);
  if (state.filter.status !== 'all') params.append('status', state.filter.status);
  params.append('page_size', '500');
  const error = $('games-error');
  try {
    const answer = await fetch(`/api/games?${params}`, { cache: 'no-store' });
    if (!answer.ok) throw new Error(await answer.text());
    const list = await answer.json();
    error.hidden = true;
    renderList(list.games);
  } catch (e) {
    error.textContent = `Cannot read the games: ${e.message}`;
    error.hidden = false;
  }
}

function renderList(games) {
  const rows = games.map((g) => el('tr', { dataset: { gameId: g.id } },
    el('td', {}, el('a', { href: `#game=${encodeURIComponent(g.id)}` }, el('code', {}, g.id))),
    el('td', {}, gameText(g)),
    el('td', {}, labelText(g.labels)),
    el('td', {}, String(g.ply)),
    el('td', {}, g.status === 'finished' ? statusText(g) : `in progress, ${statusText(g).toLowerCase()}`),
  ));
  $('game-rows').replaceChildren(...rows);
  $('no-games').hidden = games.length > 0;
}

function showList() {
  closeGame();
  $('game').hidden = true;
  $('tournament').hidden = true;
  $('games').hidden = false;
  $('tournaments').hidden = false;
  document.title = 'Game referee (PÜNCT, Dots, Punto) — spectator';
  const refresh = () => { refreshList(); refreshTournaments(); };
  refresh();
  state.listTimer = setInterval(refresh, LIST_REFRESH_MS);
}

// ---- tournaments -----------------------------------------------------------

function formatText(t) {
  return t.format.replaceAll('_', ' ') + (t.format === 'swiss' ? `, ${t.rounds} rounds` : '');
}

function eloText(elo) {
  if (!elo) return '–';
  const sign = (x) => (x > 0 ? '+' : '') + Math.round(x);
  return `${sign(elo[0])} (${sign(elo[1])} to ${sign(elo[2])})`;
}

async function refreshTournaments() {
  const error = $('tournaments-error');
  try {
    const answer = await fetch('/api/tournaments', { cache: 'no-store' });
    if (!answer.ok) throw new Error(await answer.text());
    const list = await answer.json();
    error.hidden = true;
    const rows = list.tournaments.map((t) => el('tr', { dataset: { tournamentId: t.id } },
      el('td', {}, el('a', { href: `#tournament=${encodeURIComponent(t.id)}` }, t.name || t.id)),
      el('td', {}, `${t.game} (${t.variant})`),
      el('td', {}, formatText(t)),
      el('td', {}, t.status),
      el('td', {}, `${t.games_done} / ${t.games_total}`),
      el('td', {}, t.standings.length && t.games_done ? `${t.standings[0].name} ${t.standings[0].points}` : '–'),
    ));
    $('tournament-rows').replaceChildren(...rows);
    $('no-tournaments').hidden = rows.length > 0;
  } catch (e) {
    error.textContent = `Cannot read the tournaments: ${e.message}`;
    error.hidden = false;
  }
}

function showTournament(id) {
  closeGame();
  state.tournamentId = id;
  $('games').hidden = true;
  $('tournaments').hidden = true;
  $('game').hidden = true;
  $('tournament').hidden = false;
  $('tournament-heading').textContent = `Tournament ${id}`;
  document.title = `Tournament ${id} — game referee`;
  $('tournament-status').textContent = 'Loading…';
  refreshTournament();
  state.tournamentTimer = setInterval(refreshTournament, LIST_REFRESH_MS);
}

async function refreshTournament() {
  const id = state.tournamentId;
  if (!id) return;
  const error = $('tournament-error');
  try {
    const answer = await fetch(`/api/tournaments/${encodeURIComponent(id)}`, { cache: 'no-store' });
    if (!answer.ok) throw new Error(await answer.text());
    const t = await answer.json();
    if (state.tournamentId !== id) return;
    error.hidden = true;
    renderTournament(t);
  } catch (e) {
    error.textContent = `Cannot read the tournament: ${e.message}`;
    error.hidden = false;
  }
}

function renderTournament(t) {
  $('tournament-heading').textContent = `Tournament ${t.name || t.id}`;
  const connected = t.entrants.filter((e) => e.connected).length;
  $('tournament-status').textContent =
    `${t.game} (${t.variant}), ${formatText(t)}: ${t.status}; ${t.games_done} of ${t.games_total} games played; ${connected} of ${t.entrants.length} entrants connected.`;
  $('standing-rows').replaceChildren(...t.standings.map((s) => el('tr', {},
    el('td', {}, String(s.rank)),
    el('th', { scope: 'row' }, s.name),
    el('td', {}, String(s.games)),
    el('td', {}, String(s.wins)),
    el('td', {}, String(s.draws)),
    el('td', {}, String(s.losses)),
    el('td', {}, String(Math.round(s.points * 100) / 100)),
    el('td', {}, String(Math.round(s.sonneborn_berger * 100) / 100)),
    el('td', {}, String(Math.round(s.buchholz * 100) / 100)),
    el('td', {}, eloText(s.elo)),
  )));
  const sprt = $('sprt');
  sprt.hidden = !t.sprt;
  if (t.sprt) {
    sprt.textContent = `SPRT: LLR ${t.sprt.llr.toFixed(2)} between ${t.sprt.lower.toFixed(2)} and ${t.sprt.upper.toFixed(2)}` +
      (t.sprt.decision ? `; ${t.sprt.decision} accepted.` : '; undecided.');
  }
  $('schedule-rows').replaceChildren(...(t.games || []).map((g) => el('tr', {},
    el('td', {}, String(g.number)),
    el('td', {}, String(g.round)),
    el('td', {}, g.game_id
      ? el('a', { href: `#game=${encodeURIComponent(g.game_id)}` }, g.seats.join(' – '))
      : g.seats.join(' – ')),
    el('td', {}, g.status.replaceAll('_', ' ')),
    el('td', {}, g.points.length ? `${g.points.map((p) => Math.round(p * 100) / 100).join(' – ')} ${g.reason || ''}` : ''),
  )));
}

// ---- one game ------------------------------------------------------------

function closeGame() {
  clearInterval(state.tournamentTimer);
  state.tournamentTimer = null;
  state.tournamentId = null;
  if (state.events) state.events.close();
  state.events = null;
  clearInterval(state.listTimer);
  state.listTimer = null;
  clearInterval(state.clockTimer);
  state.clockTimer = null;
  state.game = null;
  state.gameId = null;
  $('connection').textContent = '';
}

function showGame(id) {
  closeGame();
  state.gameId = id;
  state.following = true;
  state.shownPly = 0;
  $('games').hidden = true;
  $('tournaments').hidden = true;
  $('tournament').hidden = true;
  $('game').hidden = false;
  $('game-heading').textContent = `Game ${id}`;
  document.title = `Game ${id} — game referee`;
  $('game-status').textContent = 'Loading…';
  $('moves').replaceChildren();
  follow(id);
  state.clockTimer = setInterval(renderClocks, CLOCK_TICK_MS);
}

// Follows the game's event stream; every `game` event is the whole game.
function follow(id) {
  const events = new EventSource(`/api/games/${encodeURIComponent(id)}/events`);
  state.events = events;
  events.addEventListener('open', () => {
    if (state.events === events) $('connection').textContent = 'Live';
  });
  events.addEventListener('game', (e) => {
    if (state.events !== events) return;
    const game = JSON.parse(e.data);
    update(game);
    if (game.status === 'finished') {
      // Nothing more will happen: no reconnecting.
      events.close();
      $('connection').textContent = 'Game over';
    }
  });
  events.addEventListener('gone', (e) => {
    if (state.events !== events) return;
    events.close();
    $('connection').textContent = '';
    $('game-status').textContent = `This game is no longer held: ${e.data}`;
  });
  events.addEventListener('error', () => {
    if (state.events !== events) return;
    if (events.readyState === EventSource.CLOSED) {
      // Refused outright (unknown game, too many watchers): say why.
      fetch(`/api/games/${encodeURIComponent(id)}`).then(async (answer) => {
        if (!answer.ok) $('game-status').textContent = (await answer.text()).trim();
      });
      $('connection').textContent = 'Not live';
    } else {
      $('connection').textContent = 'Reconnecting…';
    }
  });
}

function update(game) {
  const previousPly = state.game ? state.game.ply : -1;
  const previousStatus = state.game ? state.game.status : null;
  state.game = game;
  state.received = performance.now();
  const scores = scoresText(game);
  $('game-status').textContent = `${statusText(game)} · ply ${game.ply}`
    + (scores ? ` · ${scores}` : '')
    + (game.draw_offers && game.draw_offers.length
      ? ` · ${game.draw_offers.map(seatName).join(' and ')} ${game.draw_offers.length > 1 ? 'agree to' : 'offers'} a draw`
      : '');
  const slider = $('ply');
  slider.max = String(game.ply);
  $('ply-max').textContent = String(game.ply);
  renderMoves(game);
  renderSupplies(game);
  renderRounds(game);
  renderSetup(game);
  renderClocks();
  if (state.following) {
    // A finished game at the same ply gets its final picture (the win shown).
    if (game.ply !== previousPly || game.status !== previousStatus) showPly(game.ply, true);
  } else {
    renderSlider();
  }
}

// A move's line of the latency ledger (docs/LAG.md), shown as its tooltip.
function latencyText(l) {
  if (!l) return '';
  const lag = l.lag_ms === null || l.lag_ms === undefined ? 'not measured' : `${l.lag_ms} ms`;
  return `charged ${l.charged_ms} ms, lag compensation ${l.compensated_ms} ms, round trip ${lag}`;
}

function renderMoves(game) {
  const items = game.moves.map((m) => el('li', { value: m.ply, class: `seat-${m.seat}` },
    el('button', {
      type: 'button',
      title: latencyText(m.latency),
      dataset: { ply: String(m.ply) },
      'aria-label': `Ply ${m.ply}: ${seatName(m.seat)} ${m.kind} ${m.notation}`,
      onclick: () => showPly(m.ply, m.ply === game.ply),
    }, m.notation)));
  const list = $('moves');
  const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  list.replaceChildren(...items);
  if (atEnd) list.scrollTop = list.scrollHeight;
  markCurrentMove();
}

function markCurrentMove() {
  for (const b of $('moves').querySelectorAll('button')) {
    b.setAttribute('aria-current', String(Number(b.dataset.ply) === state.shownPly));
  }
}

// Games played with decks (Punto) show each seat's deck instead: its size
// and which cards it holds (never their order, which is secret).
function renderDecks(game) {
  const table = $('supplies');
  $('supplies-heading').textContent = 'Decks';
  const neutral = game.decks.some((d) => d.neutral);
  const head = el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Seat'),
    el('th', { scope: 'col' }, 'Cards'), el('th', { scope: 'col' }, 'Contents'),
    ...(neutral ? [el('th', { scope: 'col' }, 'Neutral dealt')] : [])));
  const body = el('tbody', {}, ...game.decks.map((d) => el('tr', {},
    el('th', { scope: 'row' }, seatName(d.seat)),
    el('td', {}, String(d.size)),
    el('td', { class: 'cards' }, d.cards),
    ...(neutral ? [el('td', { class: 'cards' }, d.neutral)] : []))));
  table.replaceChildren(head, body);
}

// The finished rounds of a game played in rounds, one line each.
function renderRounds(game) {
  const rounds = game.rounds || [];
  $('rounds-heading').hidden = rounds.length === 0;
  $('rounds').hidden = rounds.length === 0;
  $('rounds').replaceChildren(...rounds.map((r) => el('li', {}, r)));
}

// A seeded game's setup: the full commitment from the start, the seed once
// over (then SHA-256 of the seed's 32 bytes must equal the commitment), and
// whether the creator supplied the seed instead of the server drawing it.
function renderSetup(game) {
  const setup = game.setup;
  $('setup-heading').hidden = !setup;
  $('setup').hidden = !setup;
  if (!setup) {
    $('setup').replaceChildren();
    return;
  }
  const rows = [
    el('dt', {}, 'Commitment'), el('dd', { class: 'hex' }, setup.commitment),
    el('dt', {}, 'Seed'), el('dd', { class: 'hex' }, setup.seed || 'secret until the game is over'),
    el('dt', {}, 'Drawn by'),
    el('dd', {}, setup.supplied ? 'the creator (a supplied seed: not a secret deal)' : 'the server'),
  ];
  if (setup.entropy) rows.push(el('dt', {}, 'Entropy'), el('dd', { class: 'hex' }, setup.entropy));
  $('setup').replaceChildren(...rows);
}

function renderSupplies(game) {
  const table = $('supplies');
  if (game.decks && game.decks.length) {
    table.hidden = false;
    $('supplies-heading').hidden = false;
    renderDecks(game);
    return;
  }
  $('supplies-heading').textContent = 'Supplies';
  // A game without supplies (Dots) shows no supplies section at all.
  const none = !game.supplies.length && game.game !== 'punct';
  table.hidden = none;
  $('supplies-heading').hidden = none;
  if (!game.supplies.length) {
    table.replaceChildren(el('tbody', {}, el('tr', {}, el('td', {}, 'none'))));
    return;
  }
  const codes = game.supplies[0].pieces.map((p) => p.code);
  const head = el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Seat'),
    ...codes.map((c) => el('th', { scope: 'col' }, c)), el('th', { scope: 'col' }, 'Total')));
  const body = el('tbody', {}, ...game.supplies.map((s) => el('tr', {},
    el('th', { scope: 'row' }, seatName(s.seat)),
    ...s.pieces.map((p) => el('td', {}, String(p.count))),
    el('td', {}, String(s.total)))));
  table.replaceChildren(head, body);
}

function formatMs(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const m = Math.floor(total / 60);
  const s = String(total % 60).padStart(2, '0');
  return `${m}:${s}`;
}

// The clocks as of the last update, the running one counted down since.
function renderClocks() {
  const game = state.game;
  const list = $('clocks');
  if (!game) return;
  if (!game.clock) {
    if (list.dataset.untimed !== 'true') {
      list.replaceChildren(el('dt', {}, 'Untimed'), el('dd', {}, 'no clocks'));
      list.dataset.untimed = 'true';
    }
    return;
  }
  list.dataset.untimed = 'false';
  const elapsed = game.status === 'finished' ? 0 : performance.now() - state.received;
  const rows = [];
  for (const seat of game.seats) {
    const left = game.clock.remaining_ms[seat];
    if (left === null || left === undefined) continue;
    const running = game.clock.running === seat;
    rows.push(el('dt', {}, seatName(seat)),
      el('dd', { class: running ? 'running' : '', dataset: { seat } },
        formatMs(running ? left - elapsed : left) + (running ? ' (running)' : '')));
  }
  if (game.clock.first_move_ms !== null && game.clock.first_move_ms !== undefined) {
    rows.push(el('dt', {}, 'First move'), el('dd', {}, formatMs(game.clock.first_move_ms - elapsed)));
  }
  list.replaceChildren(...rows);
}

function renderSlider() {
  const slider = $('ply');
  slider.value = String(state.shownPly);
  slider.setAttribute('aria-valuetext', `after ply ${state.shownPly} of ${slider.max}`);
  $('ply-value').textContent = String(state.shownPly);
  $('ply-live').setAttribute('aria-pressed', String(state.following));
  markCurrentMove();
}

function boardDescription(game, ply) {
  if (ply === 0) return START_DESCRIPTION[game.game] || 'The position before the first move.';
  const m = game.moves[ply - 1];
  let text = `The board after ply ${ply}: ${seatName(m.seat)} played ${m.notation} (${m.kind}).`;
  if (ply === game.ply && game.outcome) text += ` ${statusText(game)}.`;
  return text;
}

// Shows the position after `ply`; `live` keeps following new moves.
async function showPly(ply, live) {
  const game = state.game;
  if (!game) return;
  ply = Math.max(0, Math.min(game.ply, ply));
  state.shownPly = ply;
  state.following = live && ply === game.ply;
  renderSlider();
  const request = ++state.boardRequest;
  const id = state.gameId;
  const latest = ply === game.ply;
  try {
    const answer = await fetch(`/games/${encodeURIComponent(id)}.svg?ply=${ply}`,
      { cache: latest ? 'no-cache' : 'default' });
    if (!answer.ok) throw new Error((await answer.text()).trim());
    const svg = await answer.blob();
    if (request !== state.boardRequest || id !== state.gameId) return;
    const img = $('board');
    const url = URL.createObjectURL(svg);
    img.onload = () => {
      img.dataset.shownPly = String(ply);
      if (state.boardUrl && state.boardUrl !== url) URL.revokeObjectURL(state.boardUrl);
      state.boardUrl = url;
    };
    const description = boardDescription(game, ply);
    img.alt = description;
    $('board-caption').textContent = description;
    img.src = url;
  } catch (e) {
    if (request === state.boardRequest) $('board-caption').textContent = `Cannot draw the board: ${e.message}`;
  }
}

// ---- wiring ----------------------------------------------------------------

function route() {
  const match = /^#game=(.+)$/.exec(location.hash);
  const tournament = /^#tournament=(.+)$/.exec(location.hash);
  if (match) showGame(decodeURIComponent(match[1]));
  else if (tournament) showTournament(decodeURIComponent(tournament[1]));
  else showList();
}

function wire() {
  $('filter').addEventListener('submit', (e) => {
    e.preventDefault();
    state.filter.label = $('filter-label').value.trim();
    state.filter.status = $('filter-status').value;
    refreshList();
  });
  $('ply').addEventListener('input', (e) => {
    const ply = Number(e.target.value);
    showPly(ply, state.game && ply === state.game.ply);
  });
  $('ply-first').addEventListener('click', () => showPly(0, false));
  $('ply-prev').addEventListener('click', () => showPly(state.shownPly - 1, false));
  $('ply-next').addEventListener('click', () => {
    const next = state.shownPly + 1;
    showPly(next, state.game && next === state.game.ply);
  });
  $('ply-live').addEventListener('click', () => state.game && showPly(state.game.ply, true));
  window.addEventListener('hashchange', route);
  route();
}

wire();
