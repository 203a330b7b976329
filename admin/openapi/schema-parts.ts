/** The registry of named admin answer schemas and the field builders they share (admin/openapi/answers.ts). */
import { z } from 'zod';

/** Every schema given an id here becomes #/components/schemas/<id>. */
export const answerSchemas = z.registry<{ id: string }>();
export const named = <T extends z.ZodType>(id: string, schema: T): T => {
  answerSchemas.add(schema, { id });
  return schema;
};

export const time = (description: string) => z.string().meta({ format: 'date-time', description });
export const count = (description: string) => z.number().int().nonnegative().meta({ description });
export const tokens = (description: string) => count(description).nullable();
/** Money as formatUsd writes it: an exact non-negative decimal, never a float. */
export const usd = (description: string) =>
  z
    .string()
    .regex(/^[0-9]+(\.[0-9]+)?$/)
    .meta({ description });
export const pico = (description: string) =>
  z
    .string()
    .regex(/^[0-9]+$/)
    .meta({ description });

/** A page's cursor. */
export const nextCursor = z
  .string()
  .nullable()
  .meta({ description: 'Pass as cursor for the next page; null on the last page.' });
