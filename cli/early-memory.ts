/**
 * Imported first by the CLI entry (cli/index.ts), before any other module loads: the commands that run a gateway
 * cap V8's young generation from the start, since V8 grows it while the modules load and never shrinks it back
 * under load (runtime/young-generation.ts). The other commands leave it to V8.
 */
import { capYoungGeneration } from '../runtime/young-generation';

const GATEWAY_COMMANDS = ['start', 'demo'];

if (process.argv.slice(2).some((word) => GATEWAY_COMMANDS.includes(word))) capYoungGeneration();
