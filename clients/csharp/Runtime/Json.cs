// A small JSON reader and writer for the client's own needs (status bodies,
// resume frames) and for the generated stubs: no reflection, so it works the
// same under Mono, .NET and Unity's IL2CPP. A game that prefers its own JSON
// library (Unity's JsonUtility, Newtonsoft) calls the client with bodies as
// strings or bytes instead.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Shield.Json
{
    /// <summary>A malformed JSON document.</summary>
    public sealed class JsonException : Exception
    {
        /// <summary>Makes the exception with the reason.</summary>
        public JsonException(string message) : base(message) { }
    }

    /// <summary>
    /// JSON values as plain .NET objects: an object is a
    /// <c>Dictionary&lt;string, object&gt;</c> (keys in order of first
    /// appearance are not kept), an array a <c>List&lt;object&gt;</c>, a
    /// string a <c>string</c>, a number a <c>double</c>, true and false a
    /// <c>bool</c>, null <c>null</c>.
    /// </summary>
    public static class JsonValue
    {
        /// <summary>Parses one JSON document (whitespace around it allowed). Throws JsonException.</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new ArgumentNullException("text");
            var p = new Parser(text);
            p.SkipSpace();
            object v = p.Value(0);
            p.SkipSpace();
            if (p.Pos != text.Length) throw new JsonException("text after the JSON value at " + p.Pos);
            return v;
        }

        /// <summary>Parses UTF-8 bytes as one JSON document. Throws JsonException, also for bytes that are not UTF-8.</summary>
        public static object Parse(byte[] utf8)
        {
            string text;
            try { text = StrictUtf8.GetString(utf8); }
            catch (ArgumentException) { throw new JsonException("not UTF-8"); }
            return Parse(text);
        }

        /// <summary>UTF-8 that throws on invalid bytes.</summary>
        public static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        /// <summary>Writes a value (the types Parse returns, plus the integer types, float, decimal, IDictionary of string keys, IEnumerable and IJsonWritable) as compact JSON.</summary>
        public static string Write(object value)
        {
            var b = new StringBuilder();
            Write(b, value, 0);
            return b.ToString();
        }

        /// <summary>Appends value as compact JSON to b.</summary>
        public static void Write(StringBuilder b, object value)
        {
            Write(b, value, 0);
        }

        static void Write(StringBuilder b, object v, int depth)
        {
            if (depth > 64) throw new JsonException("value nested deeper than 64");
            if (v == null) { b.Append("null"); return; }
            var w = v as IJsonWritable;
            if (w != null) { w.WriteJson(b); return; }
            var s = v as string;
            if (s != null) { Quote(b, s); return; }
            if (v is bool) { b.Append((bool)v ? "true" : "false"); return; }
            if (v is double) { Number(b, (double)v); return; }
            if (v is float) { Number(b, (float)v); return; }
            if (v is int || v is long || v is short || v is sbyte || v is byte || v is ushort || v is uint || v is ulong || v is decimal)
            {
                b.Append(Convert.ToString(v, CultureInfo.InvariantCulture));
                return;
            }
            var d = v as System.Collections.IDictionary;
            if (d != null)
            {
                b.Append('{');
                bool first = true;
                foreach (System.Collections.DictionaryEntry e in d)
                {
                    if (!first) b.Append(',');
                    first = false;
                    Quote(b, Convert.ToString(e.Key, CultureInfo.InvariantCulture));
                    b.Append(':');
                    Write(b, e.Value, depth + 1);
                }
                b.Append('}');
                return;
            }
            var list = v as System.Collections.IEnumerable;
            if (list != null)
            {
                b.Append('[');
                bool first = true;
                foreach (object e in list)
                {
                    if (!first) b.Append(',');
                    first = false;
                    Write(b, e, depth + 1);
                }
                b.Append(']');
                return;
            }
            throw new JsonException("cannot write a " + v.GetType().Name + " as JSON");
        }

        /// <summary>Appends a finite number; NaN and infinities are refused, as JSON has none.</summary>
        public static void Number(StringBuilder b, double d)
        {
            if (double.IsNaN(d) || double.IsInfinity(d)) throw new JsonException("NaN and infinities are not JSON");
            if (d == Math.Floor(d) && Math.Abs(d) < 1e15) b.Append(((long)d).ToString(CultureInfo.InvariantCulture));
            else b.Append(d.ToString("R", CultureInfo.InvariantCulture));
        }

        /// <summary>Appends s as a JSON string literal.</summary>
        public static void Quote(StringBuilder b, string s)
        {
            b.Append('"');
            foreach (char c in s)
            {
                switch (c)
                {
                    case '"': b.Append("\\\""); break;
                    case '\\': b.Append("\\\\"); break;
                    case '\n': b.Append("\\n"); break;
                    case '\r': b.Append("\\r"); break;
                    case '\t': b.Append("\\t"); break;
                    case '\b': b.Append("\\b"); break;
                    case '\f': b.Append("\\f"); break;
                    default:
                        if (c < 0x20 || c == '\u2028' || c == '\u2029') b.Append("\\u").Append(((int)c).ToString("x4"));
                        else b.Append(c);
                        break;
                }
            }
            b.Append('"');
        }

        /// <summary>The value of key in obj when obj is a JSON object holding it, else null.</summary>
        public static object Get(object obj, string key)
        {
            var d = obj as Dictionary<string, object>;
            object v;
            return d != null && d.TryGetValue(key, out v) ? v : null;
        }

        /// <summary>v as a string, or null for anything else.</summary>
        public static string AsString(object v) { return v as string; }

        /// <summary>v as a double, or 0 for anything else.</summary>
        public static double AsDouble(object v) { return v is double ? (double)v : 0; }

        /// <summary>v as a long (truncated), or 0 for anything that is not a number.</summary>
        public static long AsLong(object v)
        {
            if (!(v is double)) return 0;
            double d = (double)v;
            if (d >= long.MaxValue) return long.MaxValue;
            if (d <= long.MinValue) return long.MinValue;
            return (long)d;
        }

        /// <summary>v as a bool, or false for anything else.</summary>
        public static bool AsBool(object v) { return v is bool && (bool)v; }

        sealed class Parser
        {
            readonly string s;
            public int Pos;

            public Parser(string text) { s = text; }

            public void SkipSpace()
            {
                while (Pos < s.Length && (s[Pos] == ' ' || s[Pos] == '\t' || s[Pos] == '\n' || s[Pos] == '\r')) Pos++;
            }

            JsonException Bad(string what) { return new JsonException(what + " at " + Pos); }

            public object Value(int depth)
            {
                if (depth > 128) throw Bad("nested deeper than 128");
                if (Pos >= s.Length) throw Bad("unexpected end");
                char c = s[Pos];
                switch (c)
                {
                    case '{': return Obj(depth);
                    case '[': return Arr(depth);
                    case '"': return Str();
                    case 't': Word("true"); return true;
                    case 'f': Word("false"); return false;
                    case 'n': Word("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return Num();
                        throw Bad("unexpected '" + c + "'");
                }
            }

            void Word(string w)
            {
                if (string.CompareOrdinal(s, Pos, w, 0, w.Length) != 0) throw Bad("bad literal");
                Pos += w.Length;
            }

            object Obj(int depth)
            {
                Pos++;
                var d = new Dictionary<string, object>();
                SkipSpace();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return d; }
                for (;;)
                {
                    SkipSpace();
                    if (Pos >= s.Length || s[Pos] != '"') throw Bad("expected a key");
                    string k = Str();
                    SkipSpace();
                    if (Pos >= s.Length || s[Pos] != ':') throw Bad("expected ':'");
                    Pos++;
                    SkipSpace();
                    d[k] = Value(depth + 1);
                    SkipSpace();
                    if (Pos >= s.Length) throw Bad("unexpected end");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == '}') { Pos++; return d; }
                    throw Bad("expected ',' or '}'");
                }
            }

            object Arr(int depth)
            {
                Pos++;
                var l = new List<object>();
                SkipSpace();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return l; }
                for (;;)
                {
                    SkipSpace();
                    l.Add(Value(depth + 1));
                    SkipSpace();
                    if (Pos >= s.Length) throw Bad("unexpected end");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == ']') { Pos++; return l; }
                    throw Bad("expected ',' or ']'");
                }
            }

            string Str()
            {
                Pos++;
                var b = new StringBuilder();
                while (Pos < s.Length)
                {
                    char c = s[Pos++];
                    if (c == '"') return b.ToString();
                    if (c < 0x20) throw Bad("control character in a string");
                    if (c != '\\') { b.Append(c); continue; }
                    if (Pos >= s.Length) break;
                    char e = s[Pos++];
                    switch (e)
                    {
                        case '"': b.Append('"'); break;
                        case '\\': b.Append('\\'); break;
                        case '/': b.Append('/'); break;
                        case 'b': b.Append('\b'); break;
                        case 'f': b.Append('\f'); break;
                        case 'n': b.Append('\n'); break;
                        case 'r': b.Append('\r'); break;
                        case 't': b.Append('\t'); break;
                        case 'u':
                            int code;
                            if (Pos + 4 > s.Length || !int.TryParse(s.Substring(Pos, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code))
                                throw Bad("bad \\u escape");
                            b.Append((char)code);
                            Pos += 4;
                            break;
                        default: throw Bad("bad escape");
                    }
                }
                throw Bad("unterminated string");
            }

            object Num()
            {
                int start = Pos;
                if (s[Pos] == '-') Pos++;
                if (Pos >= s.Length || s[Pos] < '0' || s[Pos] > '9') throw Bad("bad number");
                if (s[Pos] == '0') Pos++;
                else while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                if (Pos < s.Length && s[Pos] == '.')
                {
                    Pos++;
                    if (Pos >= s.Length || s[Pos] < '0' || s[Pos] > '9') throw Bad("bad number");
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    if (Pos >= s.Length || s[Pos] < '0' || s[Pos] > '9') throw Bad("bad number");
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                }
                return double.Parse(s.Substring(start, Pos - start), NumberStyles.Float, CultureInfo.InvariantCulture);
            }
        }
    }

    /// <summary>
    /// A JSON value kept as its text, for what the generated stubs do not
    /// map (a schema with $ref, oneOf, several types, or none): parse Text
    /// with the JSON library of your choice.
    /// </summary>
    public sealed class RawJson : IJsonWritable
    {
        /// <summary>The value's JSON text, e.g. <c>{"a":1}</c> or <c>null</c>.</summary>
        public string Text;

        /// <summary>A raw value holding text, which must be one JSON value.</summary>
        public RawJson(string text) { Text = text; }

        /// <summary>The raw value of a parsed value.</summary>
        public static RawJson Of(object parsed) { return new RawJson(JsonValue.Write(parsed)); }

        /// <inheritdoc/>
        public void WriteJson(StringBuilder b) { b.Append(string.IsNullOrEmpty(Text) ? "null" : Text); }

        /// <inheritdoc/>
        public override string ToString() { return Text; }
    }

    /// <summary>Helpers the generated stubs call to read and write their classes.</summary>
    public static class JsonGen
    {
        /// <summary>Appends a key of an object, with the comma before it unless it is the first.</summary>
        public static void Key(StringBuilder b, ref bool first, string key)
        {
            if (!first) b.Append(',');
            first = false;
            JsonValue.Quote(b, key);
            b.Append(':');
        }

        /// <summary>A JSON array's elements converted by f, or null when v is not an array.</summary>
        public static List<T> ListOf<T>(object v, Func<object, T> f)
        {
            var l = v as List<object>;
            if (l == null) return null;
            var o = new List<T>(l.Count);
            foreach (var e in l) o.Add(f(e));
            return o;
        }

        /// <summary>A JSON object's values converted by f, or null when v is not an object.</summary>
        public static Dictionary<string, T> MapOf<T>(object v, Func<object, T> f)
        {
            var d = v as Dictionary<string, object>;
            if (d == null) return null;
            var o = new Dictionary<string, T>(d.Count);
            foreach (var e in d) o[e.Key] = f(e.Value);
            return o;
        }

        /// <summary>v as a double, or null when it is not a number.</summary>
        public static double? NullableDouble(object v) { return v is double ? (double?)(double)v : null; }

        /// <summary>v as a long, or null when it is not a number.</summary>
        public static long? NullableLong(object v) { return v is double ? (long?)JsonValue.AsLong(v) : null; }

        /// <summary>v as a bool, or null when it is not one.</summary>
        public static bool? NullableBool(object v) { return v is bool ? (bool?)(bool)v : null; }

        /// <summary>Parses a body's text; an empty body is null.</summary>
        public static object Parse(string text) { return string.IsNullOrEmpty(text) ? null : JsonValue.Parse(text); }
    }

    /// <summary>A type that writes itself as JSON (the generated body classes do).</summary>
    public interface IJsonWritable
    {
        /// <summary>Appends this value as compact JSON.</summary>
        void WriteJson(StringBuilder b);
    }
}
