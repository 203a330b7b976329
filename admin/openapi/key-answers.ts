/** The gateway-key answers of the admin API (GET/POST /api/keys, revoke), as zod schemas (see answers.ts). */
import { z } from 'zod';
import { BULK_KEYS_MAX, type keyJson } from '../key-admin';
import { named, nextCursor, time } from './schema-parts';

const keyFields = {
  id: z.string(),
  workspace: z.string(),
  label: z.string(),
  created_at: time('When the key was created; null for keys declared in the config file.').nullable(),
  last_used_at: time('Last use, when known.').nullable(),
  revoked: z.boolean(),
  revoked_at: time('When it was revoked.').nullable(),
};
/** keyJson's fields, dates always present (a key in the store). */
const storedKeyFields = { ...keyFields, created_at: time('When the key was created.') };

export const GatewayKeyJson = named(
  'GatewayKey',
  z
    .object({
      ...keyFields,
      source: z.enum(['store', 'config']).meta({
        description: 'store: created through the API or the CLI; config: declared in gateway.config.yaml (read-only).',
      }),
    })
    .meta({ description: 'A gateway key as listed: never the key or its hash.' }),
);

export const KeysAnswer = named('KeysAnswer', z.object({ data: z.array(GatewayKeyJson), next_cursor: nextCursor }));

export const CreatedKeyAnswer = named(
  'CreatedKey',
  z.object({
    ...storedKeyFields,
    source: z.literal('store'),
    key: z
      .string()
      .regex(/^tg_[A-Za-z0-9_-]{43}$/)
      .meta({ description: 'The new gateway key, shown this once: only its hash is stored.' }),
  }),
);

export const RevokedKeyAnswer = named('RevokedKey', z.object({ id: z.string(), revoked: z.literal(true) }));

export const CreateKeyRequest = named(
  'CreateKeyRequest',
  z.object({
    workspace: z
      .string()
      .optional()
      .meta({ description: 'A workspace declared in gateway.config.yaml; the first one when absent.' }),
    label: z.string().max(200).optional(),
  }),
);

export const CreatedKeysAnswer = named(
  'CreatedKeys',
  z.object({ data: z.array(CreatedKeyAnswer).meta({ description: 'The new keys, in the order asked.' }) }),
);

export const CreateKeysRequest = named(
  'CreateKeysRequest',
  z.object({
    keys: z.array(CreateKeyRequest).min(1).max(BULK_KEYS_MAX).meta({ description: 'One entry per key to create.' }),
  }),
);

// Compile-time: keyJson (admin/key-admin.ts) sends exactly these fields.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<ReturnType<typeof keyJson>, z.output<z.ZodObject<typeof storedKeyFields>>> = true;
void sameShape;
