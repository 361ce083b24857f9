// The spectator page in a real browser: headless Chromium (Debian's package)
// driven by playwright-core, against a running punct-referee. Started by
// scripts/test-web.sh, which passes:
//   REFEREE_BIN   the punct-referee binary (its `client` subcommand plays over gRPC)
//   PUNCT_SERVER  the gRPC address, PUNCT_TOKENS a seat-token file
//   REFEREE_HTTP  the HTTP port's base URL (http://127.0.0.1:PORT)
//   ARTIFACTS     where the screenshot goes
// Steps: open the page, see a new game appear in the list, open it, watch
// moves played over gRPC arrive live, replay an earlier ply with the keyboard
// on the slider (the board must then be that ply's picture), screenshots
// (games.png: the list, spectator.png: the game view). Then a Dots game
// played live to its end (docs/rules/dots.md §11.A's capture in the running scores,
// then `ground`; dots.png) and a finished 3-player Punto match imported
// from its record (the decks and the rounds; punto.png); last a tournament
// held by the referee (`punct-referee tournament --server`): its row, its
// live standings and a link to one of its games (tournament.png).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const BIN = process.env.REFEREE_BIN;
const HTTP = process.env.REFEREE_HTTP;
const ARTIFACTS = process.env.ARTIFACTS;
assert.ok(BIN && HTTP && ARTIFACTS && process.env.PUNCT_SERVER, 'run me from scripts/test-web.sh');

// A move must show within this long of being played (the page promises one
// second; the margin is for a loaded CI machine).
const LIVE_MS = 2000;
const MOVES = ['SE@E1:E2,E3', 'SE@M5:M6,M7', 'SE@E4:E5,E6'];
// docs/rules/dots.md §11.A on 5 × 5: Red's seventh move captures Blue's 3,3 (1–0).
const DOTS_MOVES = ['3,2', '3,3', '2,3', '1,1', '4,3', '1,2', '3,4'];
// The complete 3-player record of `docs/rules/punto.md` §14, with its seed
// (the Punto fuzz target's seed corpus holds it).
const PUNTO_RECORD = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fuzz', 'corpus', 'punto', 'seed-record-3-players');

function client(...args) {
  return execFileSync(BIN, ['client', ...args], { encoding: 'utf8' });
}

function step(text) {
  console.log(`-- ${text}`);
}

const profile = mkdtempSync(join(tmpdir(), 'punct-web-profile-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failed = false;
const page = context.pages()[0] ?? await context.newPage();
const problems = [];
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });

try {
  step('the list, filtered by a label');
  await page.goto(`${HTTP}/`);
  assert.equal(await page.title(), 'Game referee (PÜNCT, Dots, Punto) — spectator');
  await page.getByLabel('Label').fill('suite:web');
  await page.getByRole('button', { name: 'Filter' }).click();

  step('a game created now appears in the list');
  const created = client('new', '--label', 'suite=web');
  const id = /[0-9a-f]{32}/.exec(created)?.[0];
  assert.ok(id, `no game id in: ${created}`);
  const other = /[0-9a-f]{32}/.exec(client('new', '--label', 'suite=other'))[0];
  const row = page.locator(`tr[data-game-id="${id}"]`);
  await row.waitFor({ state: 'visible', timeout: 5000 });
  assert.equal(await page.locator(`tr[data-game-id="${other}"]`).count(), 0, 'the filter lets another label through');
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, 'games.png') });

  step('the game view, live');
  await row.getByRole('link').click();
  await page.waitForFunction(() => document.getElementById('connection').textContent === 'Live', null, { timeout: 5000 });
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '0', null, { timeout: 5000 });
  assert.equal(await page.locator('#game-status').textContent(), 'White to move · ply 0');
  assert.equal(await page.locator('#board').getAttribute('alt'), 'The empty board before the first move.');
  assert.match(await page.locator('#supplies').innerText(), /White\s+2\s+4\s+2\s+2\s+2\s+6\s+18/);

  for (const [i, move] of MOVES.entries()) {
    const ply = i + 1;
    const started = Date.now();
    client('play', id, move);
    await page.waitForFunction((p) => document.querySelectorAll('#moves li').length === p
      && document.getElementById('ply-max').textContent === String(p), ply, { timeout: LIVE_MS });
    const seen = Date.now() - started;
    await page.waitForFunction((p) => document.getElementById('board').dataset.shownPly === String(p), ply, { timeout: LIVE_MS });
    console.log(`   ply ${ply} (${move}) shown ${seen} ms after it was played`);
    assert.equal(await page.locator(`#moves li:nth-child(${ply}) button`).textContent(), move);
  }
  assert.equal(await page.locator('#game-status').textContent(), 'Black to move · ply 3');

  step('the slider replays an earlier ply (keyboard)');
  await page.locator('#ply').focus();
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '1', null, { timeout: 5000 });
  assert.equal(await page.locator('#ply').inputValue(), '1');
  assert.equal(await page.locator('#ply-value').textContent(), '1');
  assert.equal(await page.locator('#board').getAttribute('alt'),
    'The board after ply 1: White played SE@E1:E2,E3 (place).');
  // The picture on the page is the server's picture of ply 1, not of ply 3.
  const pictures = await page.evaluate(async (gameId) => {
    const shown = await (await fetch(document.getElementById('board').src)).text();
    const one = await (await fetch(`/games/${gameId}.svg?ply=1`)).text();
    const three = await (await fetch(`/games/${gameId}.svg?ply=3`)).text();
    return { shown, one, three };
  }, id);
  assert.equal(pictures.shown, pictures.one);
  assert.notEqual(pictures.shown, pictures.three);
  assert.equal(await page.locator('#moves button[aria-current="true"]').textContent(), MOVES[0]);

  step('a move while replaying updates the list, not the board; Live catches up');
  client('play', id, 'SE@M8:M9,M10');
  await page.waitForFunction(() => document.getElementById('ply-max').textContent === '4', null, { timeout: LIVE_MS });
  assert.equal(await page.locator('#board').getAttribute('data-shown-ply'), '1');
  await page.getByRole('button', { name: 'Latest position, follow live' }).click();
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '4', null, { timeout: 5000 });
  assert.equal(await page.locator('#ply').inputValue(), '4');

  step('screenshot');
  mkdirSync(ARTIFACTS, { recursive: true });
  const shot = join(ARTIFACTS, 'spectator.png');
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`   saved ${shot}`);

  step('a Dots game, live to its end: the capture in the scores, then ground');
  const dots = /[0-9a-f]{32}/.exec(client('new', '--game', 'dots', '--width', '5', '--height', '5',
    '--start', 'empty', '--label', 'suite=web'))[0];
  await page.goto(`${HTTP}/#game=${dots}`);
  await page.waitForFunction(() => document.getElementById('connection').textContent === 'Live', null, { timeout: 5000 });
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '0', null, { timeout: 5000 });
  assert.equal(await page.locator('#game-status').textContent(), 'Red to move · ply 0 · Red 0 – Blue 0');
  assert.equal(await page.locator('#board').getAttribute('alt'), 'The field before the first move, with any start dots.');
  assert.equal(await page.locator('#supplies').isHidden(), true, 'Dots has no supplies');
  for (const [i, move] of DOTS_MOVES.entries()) {
    const ply = i + 1;
    client('play', dots, move);
    await page.waitForFunction((p) => document.querySelectorAll('#moves li').length === p
      && document.getElementById('board').dataset.shownPly === String(p), ply, { timeout: LIVE_MS });
    assert.equal(await page.locator(`#moves li:nth-child(${ply}) button`).textContent(), move);
  }
  assert.equal(await page.locator('#game-status').textContent(), 'Blue to move · ply 7 · Red 1 – Blue 0');
  // The picture shows the capture: one captured dot (Blue's 3,3) inside one
  // enclosure, and the scores.
  const dotsSvg = await page.evaluate(async () => (await fetch(document.getElementById('board').src)).text());
  assert.equal(dotsSvg.match(/<circle class="captured"/g)?.length, 1, dotsSvg);
  assert.equal(dotsSvg.match(/<polygon /g)?.length, 1, dotsSvg);
  assert.match(dotsSvg, /Red 1 – Blue 0/);
  client('play', dots, 'ground');
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '8', null, { timeout: LIVE_MS });
  await page.waitForFunction(() => document.getElementById('game-status').textContent.startsWith('Red wins'), null, { timeout: LIVE_MS });
  const dotsStatus = await page.locator('#game-status').textContent();
  assert.equal(dotsStatus, 'Red wins (ground) · ply 8 · Red 1 – Blue 0');
  assert.equal(await page.locator('#moves li:nth-child(8) button').textContent(), 'ground');
  await page.screenshot({ path: join(ARTIFACTS, 'dots.png'), fullPage: true });
  console.log(`   ${dotsStatus}; saved ${join(ARTIFACTS, 'dots.png')}`);

  step('a finished 3-player Punto match, imported: decks and rounds');
  const punto = /[0-9a-f]{32}/.exec(client('import', PUNTO_RECORD))[0];
  await page.goto(`${HTTP}/#game=${punto}`);
  await page.waitForFunction(() => document.getElementById('board').dataset.shownPly === '53', null, { timeout: 5000 });
  const puntoStatus = await page.locator('#game-status').textContent();
  assert.equal(puntoStatus, 'Orange wins (rounds won) · ply 53');
  assert.equal(await page.locator('#supplies-heading').textContent(), 'Decks');
  const decks = await page.locator('#supplies tbody tr').evaluateAll((rows) => rows.map((r) =>
    [...r.children].slice(0, 2).map((c) => c.textContent)));
  assert.deepEqual(decks, [['Red', '15'], ['Orange', '15'], ['Blue', '15']]);
  assert.equal(await page.locator('#rounds').isVisible(), true);
  assert.deepEqual(await page.locator('#rounds li').allTextContents(), [
    'round 1: ROW, seat 2 wins, removes O8, seat 3 begins next',
    'round 2: ROW, seat 1 wins, removes R9, seat 2 begins next',
    'round 3: ROW, seat 2 wins, removes O7, seat - begins next',
  ]);
  assert.equal(await page.locator('#moves li').count(), 53);
  // The shuffle in full: the record's commitment and, the match being over,
  // its seed; a finished record keeps the mark it carries, and this one
  // (docs/rules/punto.md §14's, no `x-seed: supplied`) was dealt by its writer's server.
  assert.equal(await page.locator('#setup').isVisible(), true);
  assert.deepEqual(await page.locator('#setup dd').allTextContents(), [
    '01b59b62b3a223d6b844699d16e44c1391295b4f374af71d2ffd22339eb3c9f7',
    '4b8f1348e777985783074cb0648320963c8644987c5b64ceb8c31a6c0b245af4',
    'the server',
  ]);
  await page.screenshot({ path: join(ARTIFACTS, 'punto.png'), fullPage: true });
  console.log(`   ${puntoStatus}; saved ${join(ARTIFACTS, 'punto.png')}`);

  step('a tournament held by the referee: live standings, links to its games');
  const records = mkdtempSync(join(tmpdir(), 'punct-web-records-'));
  execFileSync(BIN, ['tournament', 'greedy', 'random', '-n', '2', '--game', 'dots', '--width', '8',
    '--height', '8', '--name', 'web-cup', '--records', records], {
    encoding: 'utf8', env: { ...process.env },
  });
  rmSync(records, { recursive: true, force: true });
  await page.goto(`${HTTP}/`);
  const cup = page.locator('#tournament-rows tr', { hasText: 'web-cup' });
  await cup.waitFor({ state: 'visible', timeout: 5000 });
  assert.match(await cup.innerText(), /dots.*round robin.*finished.*2 \/ 2.*greedy 2/s);
  await cup.getByRole('link').click();
  await page.waitForFunction(() => document.querySelectorAll('#standing-rows tr').length === 2, null, { timeout: 5000 });
  const standings = await page.locator('#standing-rows tr').evaluateAll((rows) => rows.map((r) =>
    [...r.children].slice(0, 7).map((c) => c.textContent)));
  assert.deepEqual(standings, [['1', 'greedy', '2', '2', '0', '0', '2'], ['2', 'random', '2', '0', '0', '2', '0']]);
  assert.match(await page.locator('#standing-rows tr:first-child td:last-child').textContent(), /^\+\d+ \([+-]\d+ to \+\d+\)$/);
  assert.equal(await page.locator('#schedule-rows tr').count(), 2);
  await page.screenshot({ path: join(ARTIFACTS, 'tournament.png'), fullPage: true });
  await page.locator('#schedule-rows tr:first-child a').click();
  await page.waitForFunction(() => !document.getElementById('game').hidden
    && document.getElementById('game-status').textContent.includes('wins'), null, { timeout: 5000 });
  console.log(`   web-cup: greedy 2/2; saved ${join(ARTIFACTS, 'tournament.png')}`);

  assert.deepEqual(problems, [], 'the page logged errors');
  console.log('spectator page: all checks passed');
} catch (e) {
  failed = true;
  console.error(e);
  if (problems.length) console.error(problems.join('\n'));
  try {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'spectator-failure.png'), fullPage: true });
    console.error(`page at failure: ${join(ARTIFACTS, 'spectator-failure.png')}`);
  } catch { /* the browser may be gone */ }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
