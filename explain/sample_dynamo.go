package explain

// Sampling of DynamoDB tables (noamgen explain -sample N -dynamo URL).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/model"
	dlayout "github.com/noamgen/noamgen/runtime/dynamostore/layout"
)

func init() {
	samplers["dynamo"] = dynamoSample
}

// avSize approximates the bytes DynamoDB counts for an attribute value
// (its item size rules: strings and binaries by length, numbers by digits,
// one byte for BOOL and NULL, 3 bytes plus the elements for L and M).
func avSize(av types.AttributeValue) int {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return (len(v.Value)+1)/2 + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + avSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + avSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	}
	return 0
}

// dynamoSample scans at most n items of a's table at the endpoint conn["dynamo"].
func dynamoSample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error) {
	endpoint := conn["dynamo"]
	if endpoint == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("noam", "noam", "")}
	if r := envOr("AWS_REGION", ""); r != "" {
		cfg.Region = r
	}
	if id := envOr("AWS_ACCESS_KEY_ID", ""); id != "" {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(id, envOr("AWS_SECRET_ACCESS_KEY", ""), envOr("AWS_SESSION_TOKEN", ""))
	}
	c := dynamodb.NewFromConfig(cfg)
	table := conn["dynamo-prefix"] + a.Collection
	s := &Sample{Source: "table " + table + " at " + endpoint, MaxValueBytes: dlayout.MaxItemBytes, LimitOf: "item"}
	schema := conn["dynamo-prefix"] + SchemaTable
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(schema), Key: map[string]types.AttributeValue{"_id": &types.AttributeValueMemberS{Value: a.Collection}}, ConsistentRead: aws.Bool(true)})
	var missing *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &missing) {
		return nil, fmt.Errorf("reading %s: %w", schema, err)
	}
	var raw []byte
	if got != nil {
		if b, ok := got.Item["rec"].(*types.AttributeValueMemberB); ok {
			raw = b.Value
		}
	}
	if s.Recorded, err = recordedOf(a, raw); err != nil {
		return nil, err
	}
	acc := NewSampleSizes(a)
	var start map[string]types.AttributeValue
	for s.Blocks < n {
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start, Limit: aws.Int32(int32(n - s.Blocks))})
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		for _, item := range out.Items {
			s.Blocks++
			key := fmt.Sprint(item[dlayout.ID])
			if v, ok := item[dlayout.ID].(*types.AttributeValueMemberN); ok {
				key = v.Value
			}
			names := make([]string, 0, len(item))
			for k := range item {
				names = append(names, k)
			}
			sort.Strings(names)
			total := 0
			var parts []PartitionSize
			for _, k := range names {
				av := item[k]
				size := len(k) + avSize(av)
				total += size
				switch {
				case k == dlayout.ID, k == dlayout.Seq, k == dlayout.Inc:
				case k == dlayout.Root:
					acc.Entry("", size)
				case k == dlayout.Len:
					if m, ok := av.(*types.AttributeValueMemberM); ok {
						for f, v := range m.Value {
							acc.Entry(f, len(f)+avSize(v))
						}
					}
				case acc.Partitioned(k):
					l, _ := av.(*types.AttributeValueMemberL)
					ps := PartitionSize{Key: key, Field: k, Bytes: size}
					if l != nil {
						ps.Elements = len(l.Value)
						for _, e := range l.Value {
							acc.Entry(k+"[]", avSize(e))
						}
					}
					parts = append(parts, ps)
				default:
					acc.Entry(k, size)
				}
			}
			acc.Block(key, total, parts)
			if s.Blocks == n {
				break
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	acc.Fill(s)
	return s, nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
