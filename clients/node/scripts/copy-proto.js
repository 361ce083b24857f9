// Copies the repository's proto/ into this package before `npm pack` (the
// `prepack` script), so an installed package carries the contract it loads
// at run time; nothing generated is committed (proto/ here is gitignored).
import { cpSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = path.resolve(here, '..', 'proto');
rmSync(target, { recursive: true, force: true });
cpSync(path.resolve(here, '..', '..', '..', 'proto'), target, { recursive: true });
