/** The spend freezes of the admin API (admin/freeze-routes.ts), for the OpenAPI document. */
import { z } from 'zod';
import type { freezeJson } from '../freeze-routes';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../query-params';
import { param } from './parameters';
import { error, json, ref, writing } from './responses';
import { named, time } from './schema-parts';

export const FreezeJson = named(
  'SpendFreeze',
  z
    .object({
      id: z.string().meta({ description: 'frz_...: names the anomaly episode that made it.' }),
      workspace: z.string(),
      scope: z.string().meta({ description: 'What is refused: workspace, key_id=<key id> or <tag>=<value>.' }),
      reason: z.string().meta({ description: 'The rule and the spend that fired it.' }),
      state: z.enum(['active', 'lifted', 'expired']),
      created_at: time('When the anomaly froze it.'),
      expires_at: time('When it ends unless lifted first; null: until lifted.').nullable(),
      lifted_at: time('When it was lifted; null while not.').nullable(),
    })
    .meta({ description: 'A scope refused with 429 spend_anomaly_frozen after a spend anomaly (alerts.anomalies).' }),
);

const FreezesAnswer = named('FreezesAnswer', z.object({ data: z.array(FreezeJson) }));

export const freezePaths = {
  '/api/freezes': {
    get: {
      operationId: 'listFreezes',
      summary: 'The spend freezes: those in force, or all of them, newest first',
      tags: ['limits'],
      parameters: [
        param(
          'state',
          z.enum(['active', 'all']).default('active'),
          'active: in force now; all: lifted and expired too.',
        ),
        param('limit', z.number().int().min(1).max(LIMIT_MAX).default(LIMIT_DEFAULT), 'Freezes in one answer.'),
      ],
      responses: { '200': json(FreezesAnswer, 'The freezes.'), '400': ref('InvalidQuery'), ...writing },
    },
  },
  '/api/freezes/{id}': {
    delete: {
      operationId: 'liftFreeze',
      summary: 'Lift a spend freeze',
      description:
        'This instance lets the scope through at once, the others sharing the store within budgets.runtime_refresh_ms. Lifting a freeze already lifted or expired changes nothing.',
      tags: ['limits'],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': json(FreezeJson, 'The freeze as it is now.'),
        '404': error('No spend freeze with this id', ['freeze_not_found']),
        ...writing,
      },
    },
  },
};

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<z.output<typeof FreezeJson>, ReturnType<typeof freezeJson>> = true;
void sameShape;
