// Copies the repository's proto/ into this package before `npm pack` (the
// `prepack` script), so an installed package carries the contract it loads
// at run time; nothing generated is committed (proto/ here is gitignored).
// A kit folder handed out on its own already holds proto/ (docs/CLIENTS.md
// "Handing out a kit"): with no repository around it, that copy is packed.
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.resolve(here, '..', 'proto');
const source = path.resolve(here, '..', '..', '..', 'proto');
const contract = (dir) => existsSync(path.join(dir, 'referee', 'v1', 'referee.proto'));
if (contract(source)) {
  rmSync(target, { recursive: true, force: true });
  cpSync(source, target, { recursive: true });
} else if (!contract(target)) {
  console.error(`no referee/v1/referee.proto in ${source} nor in ${target}: copy the repository's proto/ into this kit folder`);
  process.exit(1);
}
